/** Exit codes are part of the CLI contract: scripts branch on them. */
export const EXIT = {
  OK: 0,
  /** The command ran and failed: database unreachable, SQL error, missing secret. */
  FAILURE: 1,
  /** The command line itself is wrong. */
  USAGE: 2,
  /** `inspect` found no run for the key. */
  NOT_FOUND: 3,
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

/** Connection strings travel in errors and logs; the password never should. */
export function maskDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    // libpq also takes the password as a query parameter.
    if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '***');
    return parsed.toString().replace('password=%2A%2A%2A', 'password=***');
  } catch {
    return '(unparseable connection string)';
  }
}
