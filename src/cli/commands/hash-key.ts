import { hashKey } from '../../telemetry/key-hash.js';
import { ATTR, KEY_HASH_SECRET_ENV } from '../../telemetry/vocabulary.js';
import { connectionOf } from '../args.js';
import { CliError, EXIT, usageError } from '../cli-error.js';
import type { Args, ArgvRules, CommandHelp, CommandOptions } from '../command.js';
import type { Connection } from '../db.js';
import { type Io, withDb } from '../io.js';
import { noSecretHelp, supportSecret } from '../support-secret.js';

/** Where `hash-key` reads the raw key: argv is readable by every local user through ps, so it never comes from there. */
export const RAW_KEY_ENV = 'TOOL_LEDGER_RAW_KEY' as const;

export const name = 'hash-key';

export const options = {} as const satisfies CommandOptions;

// Positionals are read only to refuse them: a key on the command line is a key in ps.
export const argv: ArgvRules = { positionals: true };

export const help: CommandHelp = {
  rows: [
    {
      usage: 'hash-key',
      text: [
        'Print the telemetry HMAC of a raw key read from stdin or',
        '$TOOL_LEDGER_RAW_KEY (never argv: ps shows it), under',
        '$TOOL_LEDGER_KEY_HASH_SECRET if set, else under the',
        "deployment's secret stored in the ledger schema",
      ],
    },
  ],
  examples: ["printf %s 'maria@example.com' | tool-ledger hash-key --schema billing_ledger"],
};

export function parse(args: Args, io: Io): HashKeyOptions {
  const positional = args.positionals.filter((p) => p !== '-');
  if (positional.length > 0) {
    // Not echoed: the key may be an email, and this message may end up in a ticket.
    throw usageError(
      `hash-key does not take the key as an argument: every user of this machine can read argv in ps. Pipe it on standard input (printf %s "$KEY" | tool-ledger hash-key) or set ${RAW_KEY_ENV}.`,
    );
  }
  return {
    json: args.json,
    schema: args.str('schema') ?? 'tool_ledger',
    connection: () => connectionOf(args, io),
  };
}

export interface HashKeyOptions {
  json: boolean;
  schema: string;
  connection: () => Connection;
}

export async function run(io: Io, opts: HashKeyOptions): Promise<number> {
  const key = io.env[RAW_KEY_ENV] ?? (await io.readStdin()).replace(/\r?\n$/, '');
  if (key === '') throw usageError(`hash-key needs a non-empty key on standard input or in ${RAW_KEY_ENV}.`);
  let found = await supportSecret(io.env, undefined, opts.schema);
  if (found === undefined) {
    let connection: Connection;
    try {
      connection = opts.connection();
    } catch {
      throw new CliError(
        `${KEY_HASH_SECRET_ENV} is not set, and there is no database to read the deployment's secret from: set DATABASE_URL (and --schema) to the service's ledger, or export the secret the service uses.`,
      );
    }
    found = await withDb(connection, (db) => supportSecret(io.env, db, connection.schema));
  }
  if (found === undefined) throw new CliError(`${noSecretHelp(opts.schema)}, then run hash-key again.`);
  const hash = hashKey(key, found.secret);
  const tag = `${ATTR.IDEMPOTENCY_KEY_HASH}=${hash}`;
  if (opts.json) {
    io.out(JSON.stringify({ attribute: ATTR.IDEMPOTENCY_KEY_HASH, hash, jaegerTag: tag }, null, 2));
  } else {
    // The hash alone on stdout, so `$(tool-ledger hash-key ...)` works; the hint goes to stderr.
    io.out(hash);
    io.err(`Hashed under ${found.source}. Search Jaeger by tag: ${tag}`);
  }
  return EXIT.OK;
}
