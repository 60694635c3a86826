import { quoteLiteral } from './migrations.js';
import { claimFoundSql, claimFreshSql, claimLookupSql } from './sql/claim.js';
import { quoteIdent, runsTable, settingsTable } from './sql/names.js';

/**
 * The partitioned layout's SQL (`layout: 'partitioned'`): `tool_runs` range-partitioned by `expires_at`, so a purge
 * detaches and drops whole partitions instead of deleting rows one by one. A unique index on a partitioned table
 * must include the partition key, and `(tenant, tool, key, expires_at)` would let one key live in two partitions,
 * so the key index is a plain one and the claim keeps a key in one row another way: `tool_ledger_claim()` takes a
 * transaction-scoped advisory lock on the key before it looks in every partition, so claims of one key run one at
 * a time and each sees what the previous one committed.
 */

/** Settings rows (in `tool_ledger_settings`) the layout writes: what the schema holds, and its partition width. */
export const LAYOUT_SETTING = 'layout';
export const PARTITION_WIDTH_SETTING = 'partition_width_seconds';

// Advisory lock classes (the two-int form, whose first argument names the use): keys, and partition DDL. The
// migration lock is 0x7710 (migrations.ts).
export const KEY_LOCK_CLASS = 0x7711;
const DDL_LOCK_CLASS = 0x7712;

/** How many times the claim retries a serialization failure (a row moved by a concurrent update) or a missing partition. */
export const CLAIM_TRIES = 5;

/** At most this many partitions made by one call, so a tiny width cannot make a loop of millions. */
export const MAX_PARTITIONS_PER_CALL = 1000;

const fn = (schema: string, name: string) => `${quoteIdent(schema)}.${name}`;

export function partitionedVersionTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_ledger_partitioned_migrations`;
}

/** The partition made from a legacy table by the migration (`tool_runs` of the table layout, attached whole). */
export function legacyPartition(schema: string): string {
  return `${quoteIdent(schema)}.tool_runs_legacy`;
}

/**
 * Step 1: the table layout's `tool_runs` (fresh and empty, or a deployment's with its rows) becomes the partitioned
 * table. A populated table is attached as one partition covering everything up to its latest expiry, rounded up to
 * a partition boundary: no row is copied, and the whole legacy partition is dropped once that bound has passed.
 * Its identity column becomes a plain one fed by a sequence that continues its ids, since a partition cannot keep
 * an identity of its own. The expiry index goes: the purge drops partitions and never searches by expiry.
 */
export function convertToPartitionedSql(schema: string, widthSeconds: number): string {
  const s = quoteLiteral(schema);
  const q = quoteIdent(schema);
  return `DO $tool_ledger$
DECLARE
  pk record;
  populated boolean;
  bound timestamptz;
BEGIN
  ALTER TABLE ${q}.tool_runs RENAME TO tool_runs_legacy;
  -- Its primary key, whatever its columns: the partitioned table's includes the partition key, and the attach
  -- makes that index on the partition.
  FOR pk IN SELECT conname FROM pg_constraint WHERE conrelid = ${quoteLiteral(`${q}.tool_runs_legacy`)}::regclass AND contype = 'p' LOOP
    EXECUTE format('ALTER TABLE %I.tool_runs_legacy DROP CONSTRAINT %I', ${s}, pk.conname);
  END LOOP;
  -- Since migration 8 the key index is the primary key, dropped above; the attach builds the partition's own.
  ALTER INDEX IF EXISTS ${q}.tool_runs_key_idx RENAME TO tool_runs_legacy_key_idx;
  ALTER INDEX IF EXISTS ${q}.tool_runs_job_idx RENAME TO tool_runs_legacy_job_idx;
  DROP INDEX IF EXISTS ${q}.tool_runs_expires_idx;
  ALTER TABLE ${q}.tool_runs_legacy ALTER COLUMN id DROP IDENTITY IF EXISTS;
  CREATE TABLE ${q}.tool_runs (LIKE ${q}.tool_runs_legacy INCLUDING DEFAULTS) PARTITION BY RANGE (expires_at);
  CREATE SEQUENCE ${q}.tool_runs_run_id_seq OWNED BY ${q}.tool_runs.id;
  ALTER TABLE ${q}.tool_runs ALTER COLUMN id SET DEFAULT nextval(${quoteLiteral(`${q}.tool_runs_run_id_seq`)}::regclass);
  -- Tenant first, as every unique constraint must be for Citus to distribute by tenant (partitioned migration 3
  -- brings schemas converted before to this key).
  ALTER TABLE ${q}.tool_runs ADD CONSTRAINT tool_runs_pkey PRIMARY KEY (tenant_id, id, expires_at);
  CREATE INDEX tool_runs_key_idx ON ${q}.tool_runs (tenant_id, tool_name, idempotency_key);
  CREATE INDEX tool_runs_job_idx ON ${q}.tool_runs (tenant_id, tool_name, job_id) WHERE job_id IS NOT NULL;
  COMMENT ON TABLE ${q}.tool_runs IS 'tool-ledger: one row per (tenant, tool, idempotency key), partitioned by expires_at';
  SELECT EXISTS (SELECT 1 FROM ${q}.tool_runs_legacy) INTO populated;
  IF populated THEN
    PERFORM setval(${quoteLiteral(`${q}.tool_runs_run_id_seq`)}::regclass, (SELECT max(id) FROM ${q}.tool_runs_legacy));
    SELECT to_timestamp((floor(extract(epoch FROM max(expires_at)) / ${widthSeconds}) + 1) * ${widthSeconds})
      INTO bound FROM ${q}.tool_runs_legacy;
    -- The constraint lets the attach skip its own scan of the table.
    EXECUTE format('ALTER TABLE %I.tool_runs_legacy ADD CONSTRAINT tool_runs_legacy_bound CHECK (expires_at IS NOT NULL AND expires_at < %L)', ${s}, bound);
    EXECUTE format('ALTER TABLE %I.tool_runs ATTACH PARTITION %I.tool_runs_legacy FOR VALUES FROM (MINVALUE) TO (%L)', ${s}, ${s}, bound);
  ELSE
    DROP TABLE ${q}.tool_runs_legacy;
  END IF;
  INSERT INTO ${settingsTable(schema)} (name, value) VALUES
    (${quoteLiteral(LAYOUT_SETTING)}, 'partitioned'), (${quoteLiteral(PARTITION_WIDTH_SETTING)}, ${quoteLiteral(String(widthSeconds))})
  ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = now();
END $tool_ledger$`;
}

/**
 * Partitioned migration 3: the primary key becomes `(tenant_id, id, expires_at)`, for schemas converted while it
 * was `(id, expires_at)`; one converted since has it already and is left as it is. Citus refuses to distribute a
 * table whose unique constraints lack the distribution column. The new key is built on every partition, the
 * legacy one included, under an exclusive lock on the table: a populated schema pays about one index build.
 */
export function tenantFirstKeySql(schema: string): string {
  const q = quoteIdent(schema);
  return `DO $tool_ledger$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
    WHERE c.conrelid = ${quoteLiteral(`${q}.tool_runs`)}::regclass AND c.contype = 'p' AND a.attname = 'tenant_id'
  ) THEN
    ALTER TABLE ${q}.tool_runs DROP CONSTRAINT tool_runs_pkey;
    ALTER TABLE ${q}.tool_runs ADD CONSTRAINT tool_runs_pkey PRIMARY KEY (tenant_id, id, expires_at);
  END IF;
END $tool_ledger$`;
}

/**
 * Makes the partitions that cover `from_ts` to `to_ts` (a partition per `partition_width_seconds`, aligned to the
 * epoch, named after its start in UTC) and returns the names it made. A range the legacy partition already covers
 * is skipped. Serialized under an advisory lock, so concurrent callers (the claim's fallback, maintenance, cron)
 * never race on one name.
 */
export function ensurePartitionsFunctionSql(schema: string): string {
  const s = quoteLiteral(schema);
  return `CREATE OR REPLACE FUNCTION ${fn(schema, 'tool_ledger_ensure_partitions')}(from_ts timestamptz, to_ts timestamptz)
RETURNS SETOF text LANGUAGE plpgsql AS $fn$
DECLARE
  width float8;
  lower_s float8;
  part text;
  made integer := 0;
BEGIN
  SELECT value::float8 INTO width FROM ${settingsTable(schema)} WHERE name = ${quoteLiteral(PARTITION_WIDTH_SETTING)};
  IF width IS NULL OR width <= 0 THEN
    RAISE EXCEPTION 'tool-ledger: schema % has no partition width setting: apply the partitioned layout (tool-ledger migrate --layout partitioned)', ${s};
  END IF;
  lower_s := floor(extract(epoch FROM from_ts) / width) * width;
  WHILE to_timestamp(lower_s) <= to_ts LOOP
    part := 'tool_runs_p' || to_char(to_timestamp(lower_s) AT TIME ZONE 'UTC', 'YYYYMMDD"t"HH24MISS');
    IF to_regclass(format('%I.%I', ${s}, part)) IS NULL THEN
      PERFORM pg_advisory_xact_lock(${DDL_LOCK_CLASS}, hashtext(${s}));
      BEGIN
        IF to_regclass(format('%I.%I', ${s}, part)) IS NULL THEN
          EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.tool_runs FOR VALUES FROM (%L) TO (%L)',
            ${s}, part, ${s}, to_timestamp(lower_s), to_timestamp(lower_s + width));
          made := made + 1;
          RETURN NEXT part;
        END IF;
      EXCEPTION WHEN invalid_object_definition THEN
        -- "would overlap partition tool_runs_legacy": the legacy partition holds this range.
        NULL;
      END;
    END IF;
    IF made >= ${MAX_PARTITIONS_PER_CALL} THEN
      RAISE EXCEPTION 'tool-ledger: more than ${MAX_PARTITIONS_PER_CALL} partitions needed at once: use a wider partitionWidthSeconds';
    END IF;
    lower_s := lower_s + width;
  END LOOP;
END $fn$`;
}

/** The plpgsql variable the claim function keeps the found row's partition key in. */
const FOUND_EXPIRY = 'found_expires_at';

/**
 * The statements the claim function runs under its lock: `claimFreshSql` when no partition holds the key, and
 * otherwise `claimFoundSql` narrowed to the found row's `expires_at`, so each of its reads and updates plans and
 * touches one partition instead of every one (a key says nothing of its expiry, so only the look-up visits them
 * all). The same parameters as `claimSql`, $1 to $13.
 */
function lockedClaimSql(schema: string): { readonly fresh: string; readonly found: string } {
  return {
    fresh: claimFreshSql(schema),
    found: claimFoundSql(schema, (alias) => `${alias}.expires_at = ${FOUND_EXPIRY}`),
  };
}

/** The columns of `claimSql` with their types, as the claim functions declare them. */
const CLAIM_COLUMNS = Object.entries({
  claim: 'text',
  id: 'text',
  user_id: 'text',
  parameter_hash: 'text',
  status: 'text',
  final: 'boolean',
  attempt: 'integer',
  lease_owner: 'text',
  lease_remaining_ms: 'float8',
  result_json: 'json',
  error_json: 'jsonb',
  job_id: 'text',
  trace_id: 'text',
  span_id: 'text',
  completed_at: 'timestamptz',
  expires_in_ms: 'float8',
  lease_live: 'boolean',
  takeover_due: 'boolean',
  waiting: 'boolean',
  steps: 'jsonb',
  step_token: 'text',
  lapsed: 'boolean',
});
const CLAIM_COLUMN_TYPES = CLAIM_COLUMNS.map(([name, type]) => `${name} ${type}`).join(', ');

const CLAIM_ARGUMENTS =
  'text, text, text, text, text, text, float8, float8, text, text, text, boolean, boolean';

/**
 * The claim function, `tool_ledger_claim_at()`: the table layout's claim (`claimSql`) in two steps under an
 * advisory lock on the key, since a table partitioned by expiry has no unique key index for `ON CONFLICT`. It
 * looks the key up once, in every partition, then inserts a fresh run or claims the row found, in its partition
 * only (see `lockedClaimSql`): the lock keeps other claims of the key out meanwhile. A row that moved or went
 * between the two (a completion that outlasted its TTL moves `expires_at`, `tool-ledger forget` deletes) leaves
 * the second step without a row: the function looks again.
 *
 * A takeover moves the row's `expires_at` forward, and Postgres runs an update that leaves its partition as a
 * delete plus an insert into the right one; an update that meets a row a concurrent update moved fails with a
 * serialization error (40001), retried here with a fresh snapshot. An expiry no partition covers yet (maintenance
 * fell behind) makes the partition and retries.
 *
 * Parameters as `claimSql`'s $1 to $13; it returns `claimSql`'s columns and `partition_key`, which the run's
 * fenced writes name (see `FenceScope`). Every failure happens in the statement's writes, before its first row is
 * returned, so a retried attempt never leaves rows of the failed one behind.
 */
export function claimFunctionSql(schema: string): string {
  const { fresh, found } = lockedClaimSql(schema);
  return `CREATE OR REPLACE FUNCTION ${fn(schema, 'tool_ledger_claim_at')}(${CLAIM_ARGUMENTS})
RETURNS TABLE (${CLAIM_COLUMN_TYPES}, partition_key text)
LANGUAGE plpgsql VOLATILE
-- A custom plan of the found row's claim is planned every call, and its registration (an update whose flag
-- parameter folds to false when the caller would not wait) then keeps every partition: 5-10 ms a claim with 31
-- partitions, against about 1.4 ms with the generic plan, which prunes to the found row's partition when it starts.
SET plan_cache_mode = force_generic_plan
AS $fn$
#variable_conflict use_column
DECLARE
  tries integer := 0;
  ${FOUND_EXPIRY} timestamptz;
BEGIN
  LOOP
    tries := tries + 1;
    BEGIN
      PERFORM pg_advisory_xact_lock(${KEY_LOCK_CLASS}, hashtext(${quoteLiteral(schema)} || chr(31) || $1 || chr(31) || $2 || chr(31) || $3));
      ${claimLookupSql(schema)} INTO ${FOUND_EXPIRY};
      IF NOT FOUND THEN
        RETURN QUERY ${fresh};
        RETURN;
      END IF;
      RETURN QUERY ${found};
      IF FOUND THEN RETURN; END IF;
      IF tries >= ${CLAIM_TRIES} THEN
        -- No key in the text: errors reach logs, where keys appear only hashed.
        RAISE EXCEPTION 'tool-ledger: the claimed row moved or went % times during its claim', tries
          USING ERRCODE = 'serialization_failure';
      END IF;
    EXCEPTION
      WHEN serialization_failure THEN
        IF tries >= ${CLAIM_TRIES} THEN RAISE; END IF;
      WHEN check_violation THEN
        -- "no partition of relation found for row": make it, then claim again.
        IF tries >= ${CLAIM_TRIES} THEN RAISE; END IF;
        -- Only the partition of this expiry: the ones between are maintenance's job, and each takes a lock.
        PERFORM ${fn(schema, 'tool_ledger_ensure_partitions')}(now() + make_interval(secs => $8), now() + make_interval(secs => $8));
    END;
  END LOOP;
END $fn$`;
}

/**
 * `tool_ledger_claim()`, the claim function of partitioned migrations 2 and 3, kept with its columns for
 * processes of those versions during a rolling upgrade: the same claim, without the partition key. Its callers'
 * fenced writes find their row by key, in every partition, as they always did.
 */
export function legacyClaimFunctionSql(schema: string): string {
  const columns = CLAIM_COLUMNS.map(([name]) => name).join(', ');
  return `CREATE OR REPLACE FUNCTION ${fn(schema, 'tool_ledger_claim')}(${CLAIM_ARGUMENTS})
RETURNS TABLE (${CLAIM_COLUMN_TYPES})
LANGUAGE sql VOLATILE AS $fn$
  SELECT ${columns} FROM ${fn(schema, 'tool_ledger_claim_at')}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
$fn$`;
}

/**
 * Maintenance, for the ledger, the CLI or pg_cron: makes the partitions for the next `ahead_seconds`, then drops
 * every partition whose range ended more than `grace_seconds` ago, unless a row in it still holds a live lease
 * (a handler outlasting its TTL; its completion moves the row forward). Such a partition only holds expired rows,
 * so no claim reads it as live. The drop waits at most 5 s for its lock on the table and otherwise reports the
 * partition busy, for the next run. One row per partition made, dropped, kept or busy.
 *
 * The check reads without a lock so claims go on meanwhile. A lease that had lapsed when it was read and that
 * its owner renews before the drop loses its row like a lease taken over: the owner's completion is refused by
 * the fence and says so.
 */
export function maintainFunctionSql(schema: string): string {
  const s = quoteLiteral(schema);
  return `CREATE OR REPLACE FUNCTION ${fn(schema, 'tool_ledger_maintain')}(ahead_seconds float8, grace_seconds float8 DEFAULT 0)
RETURNS TABLE (action text, partition_name text, row_count bigint)
LANGUAGE plpgsql AS $fn$
#variable_conflict use_column
DECLARE
  p record;
  upper_ts timestamptz;
  live bigint;
  total bigint;
BEGIN
  FOR partition_name IN SELECT * FROM ${fn(schema, 'tool_ledger_ensure_partitions')}(now(), now() + make_interval(secs => ahead_seconds)) LOOP
    action := 'created'; row_count := 0; RETURN NEXT;
  END LOOP;
  FOR p IN SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = to_regclass(format('%I.tool_runs', ${s}))
    ORDER BY c.relname
  LOOP
    upper_ts := substring(p.bound FROM 'TO \\(''([^'']*)''\\)')::timestamptz;
    CONTINUE WHEN upper_ts IS NULL OR upper_ts > now() - make_interval(secs => grace_seconds);
    partition_name := p.relname;
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE expires_at > now() OR (status = %L AND lease_expires_at > now())) FROM %I.%I',
      'in_progress', ${s}, p.relname) INTO total, live;
    IF live > 0 THEN
      action := 'kept'; row_count := live; RETURN NEXT;
      CONTINUE;
    END IF;
    BEGIN
      PERFORM set_config('lock_timeout', '5s', true);
      EXECUTE format('ALTER TABLE %I.tool_runs DETACH PARTITION %I.%I', ${s}, ${s}, p.relname);
      EXECUTE format('DROP TABLE %I.%I', ${s}, p.relname);
      action := 'dropped'; row_count := total; RETURN NEXT;
    EXCEPTION WHEN lock_not_available THEN
      action := 'busy'; row_count := total; RETURN NEXT;
    END;
  END LOOP;
END $fn$`;
}

/** The claim, as the store sends it: the function with `claimSql`'s thirteen parameters. */
export function partitionedClaimSql(schema: string): string {
  return `SELECT * FROM ${fn(schema, 'tool_ledger_claim_at')}($1::text, $2::text, $3::text, $4::text, $5::text, $6::text,
  $7::float8, $8::float8, $9::text, $10::text, $11::text, $12::boolean, $13::boolean)`;
}

/** One maintenance run. $1 seconds ahead to cover, $2 grace seconds past a partition's end before it is dropped. */
export function maintainSql(schema: string): string {
  return `SELECT action, partition_name, row_count::text AS row_count FROM ${fn(schema, 'tool_ledger_maintain')}($1::float8, $2::float8)`;
}

/** Partitions that cover now to $1 seconds ahead (for a start-up). */
export function ensureAheadSql(schema: string): string {
  return `SELECT count(*)::int AS made FROM ${fn(schema, 'tool_ledger_ensure_partitions')}(now(), now() + make_interval(secs => $1::float8))`;
}

/**
 * The one partition of an expiry $1 seconds from now (the transaction's now), made when missing: for a write that
 * moves a row past what maintenance keeps ahead, such as a call parked for a day awaiting approval. The ones
 * between are maintenance's job, as in the claim's fallback.
 */
export function ensurePartitionOfSql(schema: string): string {
  return `SELECT count(*)::int AS made FROM ${fn(schema, 'tool_ledger_ensure_partitions')}(now() + make_interval(secs => $1::float8), now() + make_interval(secs => $1::float8))`;
}

/** The partitions of the ledger table with their bounds, oldest first, for the CLI and tests. */
export function listPartitionsSql(schema: string): string {
  return `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = to_regclass(${quoteLiteral(runsTable(schema))}) ORDER BY c.relname`;
}
