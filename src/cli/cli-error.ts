import { maskUrlPassword } from '../ledger/drivers/connection-url.js';
import type { RefusalKind, SupportRefusal } from '../support/refusal.js';

/** Exit codes are part of the CLI contract: scripts branch on them. */
export const EXIT = {
  OK: 0,
  /** The command ran and failed: database unreachable, SQL error, missing secret. */
  FAILURE: 1,
  /** The command line itself is wrong. */
  USAGE: 2,
  /** `inspect` found no run for the key. */
  NOT_FOUND: 3,
  /**
   * `approve`/`decline`: the ledger refused the decision, nothing was recorded: the call awaits none (another status,
   * no run, past its deadline) or another person decided first (the message names who).
   */
  REFUSED: 4,
  /** `audit --verify`: a chain does not hold (an entry deleted or altered); the message names the first. */
  BROKEN: 5,
} as const;

export class CliError extends Error {
  override readonly name = 'CliError';
  readonly exitCode: number;

  constructor(message: string, exitCode: number = EXIT.FAILURE, options?: { cause?: unknown }) {
    super(message, options);
    this.exitCode = exitCode;
  }
}

export function usageError(message: string): CliError {
  return new CliError(`${message}\nRun \`tool-ledger help\` for usage.`, EXIT.USAGE);
}

/** Connection strings travel in errors and logs; the password never should (nor a ?password= parameter). */
export function maskDatabaseUrl(url: string): string {
  const masked = maskUrlPassword(url, '***');
  return masked === undefined
    ? '(unparseable connection string)'
    : masked.replace('password=%2A%2A%2A', 'password=***');
}

/** The exit code of each refusal of support/ (resolve, forget). */
const REFUSAL_EXIT = {
  not_found: EXIT.NOT_FOUND,
  ambiguous: EXIT.USAGE,
  invalid: EXIT.USAGE,
  not_migrated: EXIT.FAILURE,
  no_secret: EXIT.FAILURE,
} as const satisfies Record<RefusalKind, number>;

/** A refusal of support/ said as the CLI says errors. */
export function cliErrorOf(refusal: SupportRefusal): CliError {
  const code = REFUSAL_EXIT[refusal.kind];
  return code === EXIT.USAGE
    ? usageError(refusal.message)
    : new CliError(refusal.message, code, { cause: refusal });
}
