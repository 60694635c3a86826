import { rotateStoredSecret } from '../../ledger/settings.js';
import { settingsTable } from '../../ledger/sql/names.js';
import { keySecretUpdatedAtSql, settingsTableExistsSql } from '../../support/sql.js';
import { configuredSecret } from '../../telemetry/key-secret.js';
import { KEY_HASH_SECRET_ENV } from '../../telemetry/vocabulary.js';
import { connectionOf } from '../args.js';
import { CliError, EXIT } from '../cli-error.js';
import type { Args, CommandHelp, CommandOptions } from '../command.js';
import { type Connection, queryable } from '../db.js';
import { formatTime } from '../format.js';
import { type Io, print, withDb } from '../io.js';

export const name = 'rotate-key-secret';

export const options = { yes: { type: 'boolean', default: false } } as const satisfies CommandOptions;

export const help: CommandHelp = {
  rows: [
    {
      usage: 'rotate-key-secret [--yes]',
      text: [
        "Replace the deployment's stored key-hash secret (dry run",
        'without --yes); restart every process afterwards',
      ],
    },
  ],
  examples: ['tool-ledger rotate-key-secret --yes'],
};

export function parse(args: Args, io: Io): RotateKeySecretOptions {
  return { yes: args.flag('yes'), json: args.json, connection: connectionOf(args, io) };
}

export interface RotateKeySecretOptions {
  yes: boolean;
  json: boolean;
  connection: Connection;
}

/**
 * Replaces the deployment's key-hash secret. Processes read it once, at start, so each keeps hashing under the old
 * one until it restarts; spans, logs and forget-audit rows from before keep hashes under the old one.
 */
export async function run(io: Io, opts: RotateKeySecretOptions): Promise<number> {
  const { schema } = opts.connection;
  const table = settingsTable(schema);
  const outcome = await withDb(opts.connection, async (db) => {
    const [exists] = await db.query<{ exists: boolean }>(settingsTableExistsSql, [schema]);
    if (!exists?.exists) {
      throw new CliError(
        `Schema "${schema}" has no ${table} table (migration 4). Check --schema, or run \`tool-ledger migrate --schema ${schema}\` first.`,
      );
    }
    const [current] = await db.query<{ updated_at: Date }>(keySecretUpdatedAtSql(schema));
    if (!opts.yes) return { previous: current?.updated_at ?? null, updatedAt: null };
    return {
      previous: current?.updated_at ?? null,
      updatedAt: await rotateStoredSecret(queryable(db), schema),
    };
  });
  if (configuredSecret({}, io.env) !== undefined) {
    io.err(
      `Note: ${KEY_HASH_SECRET_ENV} is set in this shell. Processes that set it hash under it, not under the stored secret; rotate it by deploying a new value to every process.`,
    );
  }
  const restart =
    'Processes read the secret at start: restart every process of this deployment, and until each has, its spans carry hashes under the old secret. Hashes emitted before (in Jaeger, logs and tool_runs_forgotten) no longer match hash-key.';
  print(
    io,
    opts.json,
    { schema, dryRun: !opts.yes, previousSetAt: outcome.previous, rotatedAt: outcome.updatedAt },
    () =>
      opts.yes
        ? `Rotated the key-hash secret in ${table}${outcome.previous === null ? ' (there was none)' : ''}. ${restart}`
        : `Would replace the key-hash secret in ${table} (${
            outcome.previous === null ? 'none stored yet' : `set ${formatTime(outcome.previous)}`
          }; dry run: nothing changed; pass --yes to rotate). ${restart}`,
  );
  return EXIT.OK;
}
