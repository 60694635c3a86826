import { SupportRefusal } from '../support/refusal.js';
import { CliError, cliErrorOf, EXIT } from './cli-error.js';
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
