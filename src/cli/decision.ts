import { readFile } from 'node:fs/promises';
import type { ApprovalDecision } from '../contract/approval.js';
import { connectionOf, required } from './args.js';
import { EXIT, usageError } from './cli-error.js';
import type { Args, CommandOptions } from './command.js';
import type { Connection } from './db.js';
import { escapeTerminal, formatTime, quoted } from './format.js';
import { actorStep, type Io, print, withLedger } from './io.js';

// What `tool-ledger approve` and `tool-ledger decline` share: their options, reading them, and taking the
// decision through the ledger's public API (the key's lock, the audit chain, waiting callers woken).

export type DecisionKind = 'approve' | 'decline';

/** The options of both; `--arguments-file` only means something to `approve` (its parse refuses it on decline). */
export const DECISION_OPTIONS = {
  tenant: { type: 'string' },
  tool: { type: 'string' },
  key: { type: 'string' },
  by: { type: 'string' },
  reason: { type: 'string' },
  'arguments-file': { type: 'string' },
} as const satisfies CommandOptions;

export interface DecisionOptions {
  readonly decision: DecisionKind;
  readonly tenant: string;
  readonly tool: string;
  readonly key: string;
  readonly by: string;
  readonly reason: string | undefined;
  /** The approver's edit, parsed from `--arguments-file` (JSON); absent when not given. */
  readonly edit: { readonly arguments: unknown } | undefined;
  readonly json: boolean;
  readonly connection: Connection;
}

/** Reads the edited arguments: a JSON file, or `-` for stdin. */
async function readEdit(path: string, io: Io): Promise<{ arguments: unknown }> {
  let text: string;
  try {
    text = path === '-' ? await io.readStdin() : await readFile(path, 'utf8');
  } catch (error) {
    throw usageError(
      `approve --arguments-file ${JSON.stringify(path)}: cannot read it (${error instanceof Error ? error.message : String(error)}).`,
    );
  }
  try {
    return { arguments: JSON.parse(text) as unknown };
  } catch (error) {
    throw usageError(
      `approve --arguments-file ${JSON.stringify(path)} must hold the edited arguments as JSON (the tool's input, for example {"cents": 5000}): ${error instanceof Error ? error.message : String(error)}.`,
    );
  }
}

export async function parseDecision(decision: DecisionKind, args: Args, io: Io): Promise<DecisionOptions> {
  const { by } = actorStep(decision, args, {
    dryRun: 'never',
    records: `the person who ${decision === 'approve' ? 'approved' : 'declined'} the call`,
  });
  const reason = args.str('reason');
  if (decision === 'decline' && (reason === undefined || reason.trim() === '')) {
    throw usageError(
      'decline needs --reason TEXT: every later call with the key answers APPROVAL_DECLINED with it.',
    );
  }
  const file = args.str('arguments-file');
  if (decision === 'decline' && file !== undefined) {
    throw usageError('decline takes no --arguments-file: only an approval can edit what runs.');
  }
  return {
    decision,
    tenant: args.str('tenant') ?? 'default',
    tool: required(decision, 'tool', args.str('tool')),
    key: required(decision, 'key', args.str('key')),
    by: by as string,
    reason,
    edit: file === undefined ? undefined : await readEdit(file, io),
    json: args.json,
    connection: connectionOf(args, io),
  };
}

/** `approve` or `decline` on one call awaiting a decision; a refusal of the ledger exits 4 with its message. */
export async function runDecision(io: Io, opts: DecisionOptions): Promise<number> {
  const target = { tenant: opts.tenant, tool: opts.tool, key: opts.key, by: opts.by };
  const decided: ApprovalDecision = await withLedger(opts.connection, (ledger) => {
    if (opts.decision === 'decline') return ledger.decline({ ...target, reason: opts.reason ?? '' });
    return ledger.approve({
      ...target,
      ...(opts.reason === undefined ? {} : { reason: opts.reason }),
      ...(opts.edit ?? {}),
    });
  });
  const call = `tool ${quoted(opts.tool)}, key ${quoted(opts.key)}, tenant ${quoted(opts.tenant)}`;
  print(
    io,
    opts.json,
    { schema: opts.connection.schema, tenant: opts.tenant, tool: opts.tool, key: opts.key, ...decided },
    () =>
      [
        `${decided.decision === 'approved' ? 'Approved' : 'Declined'} the call of ${call} by ${escapeTerminal(decided.by)} at ${formatTime(decided.at)}${decided.reason ? `: ${escapeTerminal(decided.reason)}` : ''}.`,
        decided.decision === 'approved'
          ? `The next call with this key, its arguments and its user runs the tool once${decided.edited ? ` with the edited arguments (fingerprint ${decided.approvedFingerprint})` : ''}.`
          : 'Every call with this key now answers APPROVAL_DECLINED with this reason; the tool never runs.',
        'Recorded in the audit chain: `tool-ledger inspect` shows it, `tool-ledger audit --verify` checks the chain.',
      ].join('\n'),
  );
  return EXIT.OK;
}
