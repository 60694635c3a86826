import { ToolLedgerError } from '../contract/errors.js';
import { createLedger, type Ledger } from '../create-ledger.js';
import { SupportRefusal } from '../support/refusal.js';
import { CliError, cliErrorOf, EXIT, maskDatabaseUrl, usageError } from './cli-error.js';
import { type Connection, connect, type Db } from './db.js';
import { terminalSafeJson } from './format.js';

/** Where a command reads and writes: the terminal in `main`, a buffer in tests. */
export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly readStdin: () => Promise<string>;
}

/** A command's answer on stdout: JSON for scripts (`--json`), else the text a person reads. */
export function print(io: Io, json: boolean, data: unknown, human: () => string): void {
  io.out(json ? terminalSafeJson(data) : human());
}

/** Runs `fn` on one connection, closed afterwards; a database's own error becomes a `CliError` (exit 1). */
export async function withDb<T>(connection: Connection, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = await connect(connection);
  try {
    return await fn(db);
  } catch (error) {
    if (error instanceof CliError) throw error;
    if (error instanceof SupportRefusal) throw cliErrorOf(error);
    throw new CliError(
      `Database error: ${error instanceof Error ? error.message : String(error)}`,
      EXIT.FAILURE,
      {
        cause: error,
      },
    );
  } finally {
    await db.close().catch(() => {});
  }
}

/** The exit code of each ledger refusal a decision can meet; any other code is a failure (exit 1). */
const DECISION_EXIT: Partial<Record<ToolLedgerError['code'], number>> = {
  APPROVAL_NOT_PENDING: EXIT.REFUSED,
  APPROVAL_ALREADY_DECIDED: EXIT.REFUSED,
  APPROVAL_EXPIRED: EXIT.REFUSED,
  APPROVAL_ACTOR_REQUIRED: EXIT.USAGE,
  INPUT_INVALID: EXIT.USAGE,
};

/**
 * Runs `fn` on a ledger over the schema (no migration, no telemetry, two connections), closed afterwards: for what
 * goes through the ledger's public API, so a decision takes the key's lock, is audited and wakes waiting callers
 * as `ledger.approve` does anywhere. The ledger's refusals keep their message; their exit code says which.
 */
export async function withLedger<T>(connection: Connection, fn: (ledger: Ledger) => Promise<T>): Promise<T> {
  let ledger: Ledger;
  try {
    ledger = await createLedger({
      connectionString: connection.databaseUrl,
      schema: connection.schema,
      migrate: false,
      telemetry: false,
      poolSize: 2,
    });
  } catch (error) {
    throw new CliError(
      `Could not open the ledger in schema "${connection.schema}" at ${maskDatabaseUrl(connection.databaseUrl)}: ${error instanceof Error ? error.message : String(error)}`,
      EXIT.FAILURE,
      { cause: error },
    );
  }
  try {
    return await fn(ledger);
  } catch (error) {
    if (error instanceof CliError) throw error;
    if (error instanceof ToolLedgerError) {
      const code = DECISION_EXIT[error.code] ?? EXIT.FAILURE;
      throw code === EXIT.USAGE
        ? usageError(error.message)
        : new CliError(error.message, code, { cause: error });
    }
    throw error;
  } finally {
    await ledger.close().catch(() => {});
  }
}

/** The command-line options the actor step reads (structural, so io.ts needs no import of command.ts). */
interface ActorArgs {
  flag(name: string): boolean;
  str(name: string): string | undefined;
}

/** Who changes the ledger, and whether they mean it: the outcome of `actorStep`. */
export interface ActorStep {
  /** Only say what would change (no `--yes` where one is asked for). */
  readonly dryRun: boolean;
  /** `--by`: the person the audit records; given whenever `dryRun` is false. */
  readonly by: string | undefined;
}

/**
 * The step every command that changes the ledger for a person shares: `--yes` to mean it (else a dry run), and
 * `--by WHO` for the audit, required whenever something changes. `dryRun: 'unless-yes'` for `forget`/`resolve`;
 * `'never'` for a decision (`approve`/`decline`), which has no dry run and always needs `--by`. `records` says whom
 * the audit records, in the usage error.
 */
export function actorStep(
  command: string,
  args: ActorArgs,
  options: { readonly dryRun: 'unless-yes' | 'never'; readonly records: string },
): ActorStep {
  const dryRun = options.dryRun === 'unless-yes' && !args.flag('yes');
  const by = args.str('by');
  if (!dryRun && (by === undefined || by.trim() === '')) {
    throw usageError(
      `${command}${options.dryRun === 'unless-yes' ? ' --yes' : ''} needs --by WHO: the audit records ${options.records} (not the machine account that ran the command).`,
    );
  }
  return { dryRun, by };
}

/** The actor as support/ takes it: a dry run changes nothing and records no one. */
export function actorOf(step: ActorStep): { readonly by: string; readonly dryRun: boolean } {
  return { by: step.by ?? '(dry run)', dryRun: step.dryRun };
}
