import { auditTableDdl } from './audit/tables.js';
import { forgottenTable, quoteIdent, resolvedTable, runsTable, settingsTable } from './sql/names.js';
import { scalarServerFunctionsSql, serverFunctionsSql } from './sql/server-functions.js';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly up: (schema: string) => string;
  /**
   * Set on a migration that processes of the previous version cannot run beside (it drops, renames or re-keys
   * what they use). Only migration 8 is; from here on every migration is expand-only (docs/operations.md
   * "Rolling upgrades"), which test/unit/ledger/expand-only.test.ts checks in the SQL of every later one.
   */
  readonly breaking?: true;
}

/**
 * Ordered and append-only: a shipped migration is never edited, only followed by a new one. From migration 11 on
 * every migration is expand-only: it adds tables, nullable or defaulted columns and indexes, and never drops,
 * renames, retypes or re-keys anything, so the previous release keeps working on the new schema while a fleet
 * rolls and the new release works beside old processes. The one kind of drop allowed is an index no statement
 * needs for its answers (migration 13): its loss changes plans, never results.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'tool_runs',
    up: (schema) => {
      const t = runsTable(schema);
      return `CREATE TABLE ${t} (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  tenant_id text NOT NULL,
  tool_name text NOT NULL,
  idempotency_key text NOT NULL,
  user_id text,
  parameter_hash text NOT NULL,
  status text NOT NULL CHECK (status IN ('in_progress', 'succeeded', 'failed')),
  final boolean NOT NULL DEFAULT false,
  attempt integer NOT NULL DEFAULT 1 CHECK (attempt >= 1),
  lease_owner text,
  lease_expires_at timestamptz,
  result_json json,
  error_json jsonb,
  job_id text,
  trace_id text,
  span_id text,
  conflict_count integer NOT NULL DEFAULT 0,
  last_conflict_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  expires_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX tool_runs_key_idx ON ${t} (tenant_id, tool_name, idempotency_key);
CREATE INDEX tool_runs_expires_idx ON ${t} (expires_at);
CREATE INDEX tool_runs_job_idx ON ${t} (tenant_id, tool_name, job_id) WHERE job_id IS NOT NULL;
CREATE INDEX tool_runs_in_progress_idx ON ${t} (lease_expires_at) WHERE status = 'in_progress';
COMMENT ON TABLE ${t} IS 'tool-ledger: one row per (tenant, tool, idempotency key)';`;
    },
  },
  {
    version: 2,
    name: 'tool_runs_waiters',
    // A completion notifies only when a duplicate registered as waiting: NOTIFY holds a lock across commit that
    // serializes every notifying commit. A constant default adds the column without rewriting the table.
    up: (schema) =>
      `ALTER TABLE ${runsTable(schema)} ADD COLUMN waiters boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN ${runsTable(schema)}.waiters IS 'tool-ledger: a duplicate waits on this run; its completion notifies'`,
  },
  {
    version: 3,
    name: 'tool_runs_forgotten',
    // The key is kept in its telemetry form (raw only when safe to show, else its HMAC), so the audit of an
    // erasure never holds the personal data it erased.
    up: (schema) => {
      const t = forgottenTable(schema);
      return `CREATE TABLE ${t} (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id bigint NOT NULL,
  tenant_id text NOT NULL,
  tool_name text NOT NULL,
  key_attribute text NOT NULL CHECK (key_attribute IN ('tool_ledger.idempotency.key', 'tool_ledger.idempotency.key_hash')),
  key_value text NOT NULL,
  forgotten_by text NOT NULL,
  forgotten_at timestamptz NOT NULL DEFAULT now(),
  reason text
);
COMMENT ON TABLE ${t} IS 'tool-ledger: runs deleted by tool-ledger forget, with who, when and why'`;
    },
  },
  {
    version: 4,
    name: 'tool_ledger_settings',
    // The key-hash secret lives here so every process and the CLI hash keys alike (docs/telemetry.md, "Keys").
    // The row is made at a ledger's first start, not here: the script must stay printable for a DBA. No grant to
    // PUBLIC, so a role that may read only the explorer's view never reads the secret.
    up: (schema) => {
      const t = settingsTable(schema);
      return `CREATE TABLE ${t} (
  name text PRIMARY KEY,
  value text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
REVOKE ALL ON TABLE ${t} FROM PUBLIC;
COMMENT ON TABLE ${t} IS 'tool-ledger: per-deployment settings, such as the secret telemetry hashes keys under'`;
    },
  },
  {
    version: 5,
    name: 'tool_runs_hot_completion',
    // With the partial in-progress index gone, a completion (the TTL counts from the claim, see completeSql) and a
    // lease renewal change no indexed column, so Postgres updates the row on its page (HOT) instead of adding an
    // entry to every index. Nothing read that index: a takeover finds its row by key, purging goes by `expires_at`.
    up: (schema) => `DROP INDEX IF EXISTS ${quoteIdent(schema)}.tool_runs_in_progress_idx`,
  },
  {
    version: 6,
    name: 'tool_runs_no_check_constraints',
    // Postgres rebuilds a table's CHECK constraints from their stored text on every INSERT and UPDATE it executes,
    // prepared or not: 11% of the server's instructions per first execution (docs/performance.md). Only tool-ledger's
    // own statements write `status` and `attempt`, from constants; a row edited by hand into another status is
    // refused by the claim with a message (see judgeClaim). Dropping a constraint is catalog-only, and processes
    // of the previous version keep working on the migrated table.
    up: (schema) => {
      const t = runsTable(schema);
      return `ALTER TABLE ${t} DROP CONSTRAINT IF EXISTS tool_runs_status_check;
ALTER TABLE ${t} DROP CONSTRAINT IF EXISTS tool_runs_attempt_check`;
    },
  },
  {
    version: 7,
    name: 'tool_runs_steps',
    // Recorded steps (`ctx.step`) live on their run's row: they expire and are purged with it, a takeover reads
    // them in its claim, and no index covers them, so recording one is a HOT update. `step_token` is drawn at a
    // run's first step and makes its provider keys differ from those of a later run of the same key (after the
    // TTL). Status 'unknown' (an interrupted effect waiting for an operator) needs no DDL since migration 6.
    // The audit of `tool-ledger resolve` mirrors that of forget.
    up: (schema) => {
      const t = runsTable(schema);
      const r = resolvedTable(schema);
      return `ALTER TABLE ${t} ADD COLUMN steps jsonb;
ALTER TABLE ${t} ADD COLUMN step_token text;
COMMENT ON COLUMN ${t}.steps IS 'tool-ledger: recorded steps of the run, by step name';
CREATE TABLE ${r} (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id bigint NOT NULL,
  tenant_id text NOT NULL,
  tool_name text NOT NULL,
  key_attribute text NOT NULL,
  key_value text NOT NULL,
  resolution text NOT NULL,
  resolved_by text NOT NULL,
  resolved_at timestamptz NOT NULL DEFAULT now(),
  reason text
);
COMMENT ON TABLE ${r} IS 'tool-ledger: unknown outcomes settled by tool-ledger resolve, with who, when and how'`;
    },
  },
  {
    version: 8,
    name: 'tool_runs_tenant_key',
    // The one breaking migration: it re-keys tool_runs, which processes before it address by `id`.
    breaking: true,
    // The key becomes the primary key. It starts with the tenant, as every unique constraint must for a table
    // distributed by tenant (Citus, docs/operations.md "Distributing by tenant"), and every hot-path statement names it.
    // A first execution's insert then adds two index entries instead of three: the `id` index goes (ids stay, for
    // support and the audits, drawn from the same identity) and the expiry B-tree becomes a BRIN, which an insert
    // of a range not yet summarized does not touch. Expiry grows with insertion order (the TTL counts from the
    // claim), which is what a BRIN needs. The audits' keys gain the tenant for the same reason. Processes of the
    // previous version write by `id`: stop them before this runs (docs/ledger.md "Migrations").
    up: (schema) => {
      const t = runsTable(schema);
      const s = quoteIdent(schema);
      return `ALTER TABLE ${t} DROP CONSTRAINT tool_runs_pkey;
ALTER TABLE ${t} ADD CONSTRAINT tool_runs_pkey PRIMARY KEY USING INDEX tool_runs_key_idx;
DROP INDEX ${s}.tool_runs_expires_idx;
CREATE INDEX tool_runs_expires_idx ON ${t} USING brin (expires_at);
ALTER TABLE ${forgottenTable(schema)} DROP CONSTRAINT tool_runs_forgotten_pkey;
ALTER TABLE ${forgottenTable(schema)} ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE ${resolvedTable(schema)} DROP CONSTRAINT tool_runs_resolved_pkey;
ALTER TABLE ${resolvedTable(schema)} ADD PRIMARY KEY (tenant_id, id)`;
    },
  },
  {
    version: 10,
    name: 'tool_runs_created_brin',
    // The console's reads: a search by time range (tenant, tool, status or user within a window) and a run by its
    // id (migration 8 dropped the index on id). Rows arrive in the order of both columns, so one BRIN index on
    // (created_at, id) narrows either to a few block ranges; a BRIN entry covers 128 pages. (A first execution into
    // a range vacuum has already summarized does update its summary: see migration 13.) The primary key serves a
    // search by key (src/support/search-sql.ts): no index on the key alone, which every insert would pay for.
    up: (schema) =>
      `CREATE INDEX IF NOT EXISTS tool_runs_created_brin ON ${runsTable(schema)} USING brin (created_at, id)`,
  },
  {
    version: 11,
    name: 'tool_runs_approvals',
    // Approvals (issue 38; 10 went to the console's index) (docs/ledger.md, "Approvals"): two nullable columns without a default, which Postgres adds to the
    // catalog only (no rewrite), and no index, so a first execution writes exactly what it wrote before. The states
    // 'awaiting_approval', 'approved' and 'declined' need no DDL since migration 6; expiry of an undecided approval
    // is derived from `approval_deadline`, never stored. The audit chain gets its own append-only table.
    up: (schema) => {
      const t = runsTable(schema);
      return `ALTER TABLE ${t} ADD COLUMN approval_deadline timestamptz;
ALTER TABLE ${t} ADD COLUMN approval jsonb;
COMMENT ON COLUMN ${t}.approval IS 'tool-ledger: the arguments awaiting approval, then the decision (by, at, reason, fingerprints, edit)';
${auditTableDdl(schema)}`;
    },
  },
  {
    version: 12,
    name: 'tool_runs_server_functions',
    // A first execution's insert and completion as PL/pgSQL functions, which keep their statements' plans per
    // server connection: the table layout calls them when its driver sends unnamed statements (behind a pooler in
    // transaction mode), which Postgres would otherwise parse and plan on every call (sql/server-functions.ts).
    // Functions only: processes of version 11 go on sending the statements themselves.
    up: (schema) => serverFunctionsSql(schema),
  },
  {
    version: 13,
    name: 'tool_runs_no_expiry_brin',
    // The BRIN on expires_at (migration 8) taxed every first execution whose block range was already summarized:
    // the first range of a new table, and in a table that purges, every range, since new rows refill the space a
    // purge freed and vacuum has summarized those ranges. There a first execution writes a summary update of 78-88
    // bytes for each BRIN (bench/wal-records.mjs), and a refilled range's summary spans from its oldest row to now,
    // so it no longer narrows a search either. Nothing needs it: the purge sweeps the heap in TID windows on
    // PostgreSQL 14 and later (purge-sweep.ts), and its whole-table batches (PostgreSQL 13, Citus shards) take
    // the same rows with a scan. The partitioned layout never had it. Processes of version 12 run unchanged.
    up: (schema) => `DROP INDEX IF EXISTS ${quoteIdent(schema)}.tool_runs_expires_idx`,
  },
  {
    version: 14,
    name: 'tool_runs_scalar_server_functions',
    // Migration 12's statements again, as functions answering a scalar called in the select list: a function
    // returning a table goes through a function scan and a result set built row by row on every call, about a tenth
    // of the pair's server time (sql/server-functions.ts). Functions only: processes of versions 12 and 13 go on
    // calling migration 12's, which stay.
    up: (schema) => scalarServerFunctionsSql(schema),
  },
];

export const LATEST_VERSION = MIGRATIONS.at(-1)!.version;

/** The last migration processes of an older version cannot run beside (see `Migration.breaking`). */
export const LAST_BREAKING_VERSION = Math.max(...MIGRATIONS.filter((m) => m.breaking).map((m) => m.version));

const APPLICATION_PREFIX = 'tool-ledger';

/**
 * The `application_name` a ledger's connections carry: the schema level the code was written for and the schema,
 * so `tool-ledger migrate --check` can tell from `pg_stat_activity` which versions of the code are connected.
 * Postgres keeps 63 bytes; a longer schema name is cut (the check then matches by prefix).
 */
export function ledgerApplicationName(schema: string): string {
  return `${APPLICATION_PREFIX} v${LATEST_VERSION} ${schema}`.slice(0, 63);
}

/** The schema level and schema a ledger connection's `application_name` names, or undefined for anything else. */
export function parseLedgerApplicationName(
  name: string,
): { readonly version: number; readonly schema: string } | undefined {
  const match = /^tool-ledger v(\d+) (.+)$/.exec(name);
  return match ? { version: Number(match[1]), schema: match[2] as string } : undefined;
}

export function versionTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_ledger_migrations`;
}

// Any stable constant; the second lock argument is the schema, so ledgers in different schemas don't wait on
// each other.
const LOCK_CLASS = 0x7710;

/** The schema's migration lock, held to the end of the transaction; distributing it (citus-sql.ts) takes it too. */
export function migrationLockSql(schema: string): string {
  return `SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(${quoteLiteral(schema)}))`;
}

/** Statements run, in order and inside one transaction, before any migration. */
export function migrationPreludeSql(schema: string): string[] {
  return [
    migrationLockSql(schema),
    `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`,
    `CREATE TABLE IF NOT EXISTS ${versionTable(schema)} (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  ];
}

export function quoteLiteral(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * The complete migration script, as a DBA would apply it by hand (`tool-ledger migrate --print-sql`).
 * Idempotent: it skips versions already recorded.
 */
export function migrationScript(schema: string, fromVersion = 0): string {
  const parts = ['BEGIN;', ...migrationPreludeSql(schema).map((s) => `${s};`)];
  for (const migration of MIGRATIONS) {
    if (migration.version <= fromVersion) continue;
    parts.push(
      `-- ${migration.version}: ${migration.name}`,
      `DO $tool_ledger$ BEGIN
IF NOT EXISTS (SELECT 1 FROM ${versionTable(schema)} WHERE version = ${migration.version}) THEN
${migration
  .up(schema)
  .split(';\n')
  .map((s) => `  EXECUTE ${quoteLiteral(s.trim().replace(/;$/, ''))};`)
  .join('\n')}
  INSERT INTO ${versionTable(schema)} (version, name) VALUES (${migration.version}, ${quoteLiteral(migration.name)});
END IF;
END $tool_ledger$;`,
    );
  }
  parts.push('COMMIT;');
  return parts.join('\n');
}
