import type { Args, CommandHelp } from '../command.js';
import { DECISION_OPTIONS, type DecisionOptions, parseDecision, runDecision } from '../decision.js';
import type { Io } from '../io.js';

export const name = 'approve';

export const options = DECISION_OPTIONS;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'approve --tool N --key K [--tenant T] --by WHO [--reason TEXT] [--arguments-file F]',
      text: [
        'Approve a call awaiting approval (list --status awaiting_approval):',
        'the next call with the key and its arguments runs once. --arguments-file',
        'F (JSON, - for stdin) runs the edited arguments instead. Audited as by WHO',
      ],
    },
  ],
  examples: [
    "tool-ledger approve --tenant acme --tool refund --key refund-o_1 --by ana@acme --reason 'checked the order'",
  ],
};

export function parse(args: Args, io: Io): Promise<DecisionOptions> {
  return parseDecision('approve', args, io);
}

export function run(io: Io, opts: DecisionOptions): Promise<number> {
  return runDecision(io, opts);
}
