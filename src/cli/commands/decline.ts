import type { Args, CommandHelp } from '../command.js';
import { DECISION_OPTIONS, type DecisionOptions, parseDecision, runDecision } from '../decision.js';
import type { Io } from '../io.js';

export const name = 'decline';

// Shares approve's options; its parse refuses --arguments-file, which only an approval takes.
export const options = DECISION_OPTIONS;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'decline --tool N --key K [--tenant T] --by WHO --reason TEXT',
      text: [
        'Decline a call awaiting approval: every call with the key then',
        'answers APPROVAL_DECLINED with the reason, and the tool never runs',
      ],
    },
  ],
  examples: [
    "tool-ledger decline --tenant acme --tool refund --key refund-o_1 --by ana@acme --reason 'duplicate request'",
  ],
};

export function parse(args: Args, io: Io): Promise<DecisionOptions> {
  return parseDecision('decline', args, io);
}

export function run(io: Io, opts: DecisionOptions): Promise<number> {
  return runDecision(io, opts);
}
