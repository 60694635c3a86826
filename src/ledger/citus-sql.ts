import { migrationLockSql, quoteLiteral } from './migrations.js';
import { expired } from './sql/columns.js';
import { quoteIdent, runsTable, settingsTable } from './sql/names.js';
import { KEY_FENCE } from './sql/runs.js';

/**
 * The SQL of a ledger distributed by tenant with Citus (`distribute: true`, `tool-ledger migrate --distribute`):
 * what distributes the tables, and the few statements Citus needs written another way. The store picks these once,
 * at start, when the schema's settings say it is distributed (`DISTRIBUTION_SETTING`); on one Postgres nothing here
 * runs. Citus evaluates the functions of a write that are not immutable on the coordinator before it routes the
 * statement to the tenant's shard, and refuses such a function where it might not be evaluated (in a `CASE` or a
 * `COALESCE`) or where it reads a column; the variants below read the clock once instead.
 */

/** The settings row that records a distributed schema, and its value. */
export const DISTRIBUTION_SETTING = 'distribution';
export const CITUS_DISTRIBUTION = 'citus';

/** The column every run table is distributed by. */
export const DISTRIBUTION_COLUMN = 'tenant_id';

/**
 * The tables that hold a tenant's rows, distributed by tenant and colocated with the first, so a run and its audit
 * records live on one shard; and the deployment's own tables, copied to every node as reference tables.
 */
export const DISTRIBUTED_TABLES = ['tool_runs', 'tool_runs_forgotten', 'tool_runs_resolved'] as const;
export const REFERENCE_TABLES = ['tool_ledger_settings', 'tool_ledger_migrations'] as const;

const qualified = (schema: string, table: string) => `${quoteIdent(schema)}.${quoteIdent(table)}`;

/** The installed Citus version, no row without Citus. */
export function citusVersionSql(): string {
  return `SELECT extversion AS version FROM pg_extension WHERE extname = 'citus'`;
}

/**
 * How each table of the schema is placed now: `method` `h` (distributed by hash), `n` (a reference table when
 * `replication` is `t`), or null (a plain table of the coordinator), with the distribution column and colocation
 * group. Needs Citus (its catalog). $1 schema, $2 table names.
 */
export function tablePlacementSql(): string {
  return `SELECT c.relname AS name, p.partmethod AS method, p.repmodel AS replication, p.colocationid AS colocation,
  CASE WHEN p.partmethod = 'h' THEN column_to_column_name(p.logicalrelid, p.partkey) END AS column_name,
  c.relkind = 'p' AS partitioned
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
WHERE n.nspname = $1::text AND c.relname = ANY ($2::text[]) AND c.relkind IN ('r', 'p')`;
}

/** Distributes a run table by tenant. $1 the table (`schema.table` quoted), $2 `colocate_with` ('default' or a table). */
export function distributeTableSql(): string {
  return `SELECT create_distributed_table($1::text::regclass, '${DISTRIBUTION_COLUMN}', colocate_with => $2::text)`;
}

/** Makes a table a reference table, copied to every node. $1 the table. */
export function referenceTableSql(): string {
  return 'SELECT create_reference_table($1::text::regclass)';
}

/**
 * Frees the coordinator's local copy of a table Citus distributed with rows in it: Citus copies the rows into
 * the shards and leaves the old ones on disk, unread. $1 the table.
 */
export function truncateLocalDataSql(): string {
  return 'SELECT truncate_local_data_after_distributing_table($1::text::regclass)';
}

/** Records that the schema is distributed (the store reads it at start to pick its statements). */
export function recordDistributionSql(schema: string): string {
  return `INSERT INTO ${settingsTable(schema)} (name, value) VALUES (${quoteLiteral(DISTRIBUTION_SETTING)}, ${quoteLiteral(CITUS_DISTRIBUTION)})
ON CONFLICT (name) DO UPDATE SET value = excluded.value`;
}

/**
 * The fenced completion on Citus, of a run within its TTL: `completeSql`'s rule that keeps the expiry, as a
 * condition instead of a `CASE` (Citus refuses `now()` and `timestamptz + interval` in a `CASE` of a write: it
 * evaluates them on the coordinator before it routes the statement, and a `CASE` might not evaluate them all). A
 * plain single-row update, which Citus plans on its fast path. No row back: the fence refused it, or the run
 * outlasted its TTL (`citusLateCompleteSql`). It returns the times as written (Citus refuses a function that is
 * not immutable in `RETURNING`, so the store takes their difference), and `waiters`: the notice would fire on the
 * worker, where no one listens, so the store sends it on the coordinator (`notifySql`). The fence's $1 to $5, then
 * $6 status, $7 final, $8 result json, $9 error json.
 */
export function citusCompleteSql(schema: string): string {
  return `UPDATE ${runsTable(schema)} SET ${COMPLETION}
WHERE ${KEY_FENCE} AND expires_at > now()
RETURNING ${COMPLETED}`;
}

/** The completion of a run that outlasted its TTL: its expiry moves to `ttlSeconds` after now. $10 ttl seconds. */
export function citusLateCompleteSql(schema: string): string {
  return `UPDATE ${runsTable(schema)} SET ${COMPLETION}, expires_at = now() + make_interval(secs => $10::float8)
WHERE ${KEY_FENCE} AND expires_at <= now()
RETURNING ${COMPLETED}`;
}

const COMPLETION = `status = $6::text, final = $7::boolean, result_json = $8::json, error_json = $9::jsonb,
  lease_owner = NULL, lease_expires_at = NULL, completed_at = now(), updated_at = now()`;
const COMPLETED = 'id::text AS id, completed_at, expires_at, waiters';

/** Wakes a completed run's waiters, on the coordinator, where they listen. $1 channel, $2 run id. */
export function notifySql(): string {
  return 'SELECT pg_notify($1::text, $2::text)';
}

/**
 * A step's end on Citus: `finishStepSql` built from immutable JSON functions around a step object of parameters
 * and the clock (which Citus evaluates on the coordinator), since it refuses a stable function such as
 * `jsonb_build_object` that reads a column. The step keeps the start it recorded (`startedAt`), as there. The same
 * parameters ($1 to $9).
 */
export function citusFinishStepSql(schema: string): string {
  return `UPDATE ${runsTable(schema)} SET
  steps = jsonb_set(coalesce(steps, '{}'::jsonb), ARRAY[$6::text],
    jsonb_build_object('status', $7::text, 'attempt', $4::integer, 'startedAt', now(), 'completedAt', now(),
      'result', $8::text, 'error', $9::jsonb)
    || coalesce(jsonb_set('{}'::jsonb, '{startedAt}', steps -> $6::text -> 'startedAt'), '{}'::jsonb)),
  updated_at = now()
WHERE ${KEY_FENCE}
RETURNING id`;
}

/**
 * One round of the purge on Citus: a batch on every shard of `tool_runs`, each on its worker, in parallel
 * (`run_command_on_shards`). A shard is a plain table there, so each batch deletes by `ctid` the rows it locked, as
 * the table layout's batch does (see `purgeWindowSql`), but over the whole shard: the sweep's windows need the
 * heap's size, and the coordinator holds no heap of a distributed table. Answers the rows deleted, the most one
 * shard deleted (the purge goes on while a shard filled its batch) and the first failure, if any. $1 batch size.
 */
export function purgeShardsSql(schema: string): string {
  const command = `WITH batch AS MATERIALIZED (SELECT r.ctid AS at FROM %1$s r WHERE ${expired('r')} LIMIT {batch} FOR UPDATE SKIP LOCKED), gone AS (DELETE FROM %1$s WHERE ctid = ANY (ARRAY(SELECT at FROM batch)) RETURNING 1) SELECT count(*) FROM gone`;
  return `SELECT coalesce(sum(result::bigint) FILTER (WHERE success), 0)::bigint::text AS deleted,
  coalesce(max(result::bigint) FILTER (WHERE success), 0)::bigint::text AS most,
  min(result) FILTER (WHERE NOT success) AS failure
FROM run_command_on_shards(${quoteLiteral(runsTable(schema))}, replace(${quoteLiteral(command)}, '{batch}', $1::integer::text))`;
}

/**
 * The distribution as a DBA applies it by hand (`tool-ledger migrate --distribute --print-sql`), after the
 * migration script: each table distributed unless it is already, then the setting. Refuses a server without Citus.
 */
export function distributionScript(schema: string): string {
  const placed = (table: string) =>
    `EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = ${quoteLiteral(qualified(schema, table))}::regclass)`;
  const [first, ...colocated] = DISTRIBUTED_TABLES;
  const lines = [
    `-- Distribute schema ${schema} by ${DISTRIBUTION_COLUMN} with Citus (on the coordinator).`,
    'BEGIN;',
    `${migrationLockSql(schema)};`,
    `DO $tool_ledger_citus$ BEGIN
IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
  RAISE EXCEPTION 'tool-ledger: this server has no Citus: CREATE EXTENSION citus on the coordinator first';
END IF;
IF NOT ${placed(first)} THEN
  PERFORM create_distributed_table(${quoteLiteral(qualified(schema, first))}, '${DISTRIBUTION_COLUMN}');
END IF;
${colocated
  .map(
    (table) => `IF NOT ${placed(table)} THEN
  PERFORM create_distributed_table(${quoteLiteral(qualified(schema, table))}, '${DISTRIBUTION_COLUMN}', colocate_with => ${quoteLiteral(qualified(schema, first))});
END IF;`,
  )
  .join('\n')}
${REFERENCE_TABLES.map(
  (table) => `IF NOT ${placed(table)} THEN
  PERFORM create_reference_table(${quoteLiteral(qualified(schema, table))});
END IF;`,
).join('\n')}
END $tool_ledger_citus$;`,
    `${recordDistributionSql(schema)};`,
    'COMMIT;',
  ];
  return lines.join('\n');
}
