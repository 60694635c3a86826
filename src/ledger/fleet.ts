import type { Queryable } from '../contract/types.js';
import {
  ledgerApplicationName,
  MIGRATIONS,
  parseLedgerApplicationName,
  quoteLiteral,
  versionTable,
} from './migrations.js';

// What `tool-ledger migrate --check` reads: the schema's applied migrations and, from pg_stat_activity, which
// versions of the ledger's code hold connections to the database (their `application_name`, set by
// ledgerApplicationName), to say whether the pending migrations are safe to apply with the fleet running.

/** The migrations the schema has applied (none when it has no version table yet). */
export function appliedVersionsSql(schema: string): string {
  return `SELECT version FROM ${versionTable(schema)} ORDER BY version`;
}

/** Whether the schema's version table exists. */
export function versionTableExistsSql(schema: string): string {
  return `SELECT to_regclass(${quoteLiteral(versionTable(schema))}) IS NOT NULL AS present`;
}

/** Connections to this database other than this one, by application_name. */
export const CONNECTED_APPLICATIONS_SQL = `SELECT application_name, count(*)::int AS connections
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
GROUP BY application_name`;

/** The fleet as the check sees it. */
export interface FleetReport {
  readonly schema: string;
  readonly applied: readonly number[];
  readonly pending: readonly number[];
  /** Pending migrations processes of an older version cannot run beside. */
  readonly breakingPending: readonly number[];
  /** Connected ledger processes of this schema, by the schema level their code was written for. */
  readonly processes: readonly { readonly version: number; readonly connections: number }[];
  /** Connections without a tool-ledger application_name: other programs, or releases before it was set. */
  readonly unnamedConnections: number;
  /** Connected processes that cannot run on the schema once the pending migrations are applied (or already). */
  readonly incompatible: readonly { readonly version: number; readonly why: string }[];
  readonly compatible: boolean;
}

export async function checkFleet(db: Queryable, schema: string): Promise<FleetReport> {
  const present = (await db.query<{ present: boolean }>(versionTableExistsSql(schema))).rows[0]?.present;
  const applied = present
    ? (await db.query<{ version: number }>(appliedVersionsSql(schema))).rows.map((r) => Number(r.version))
    : [];
  const pending = MIGRATIONS.map((m) => m.version).filter((v) => !applied.includes(v));
  const breakingPending = MIGRATIONS.filter((m) => m.breaking && pending.includes(m.version)).map(
    (m) => m.version,
  );
  const byVersion = new Map<number, number>();
  let unnamedConnections = 0;
  const ours = ledgerApplicationName(schema).replace(/^tool-ledger v\d+ /, '');
  for (const row of (
    await db.query<{ application_name: string; connections: number }>(CONNECTED_APPLICATIONS_SQL)
  ).rows) {
    const parsed = parseLedgerApplicationName(row.application_name ?? '');
    if (parsed === undefined) {
      unnamedConnections += Number(row.connections);
      continue;
    }
    if (parsed.schema !== ours) continue;
    byVersion.set(parsed.version, (byVersion.get(parsed.version) ?? 0) + Number(row.connections));
  }
  const processes = [...byVersion].map(([version, connections]) => ({ version, connections }));
  const incompatible: { version: number; why: string }[] = [];
  const applyingThrough = Math.max(0, ...applied, ...pending);
  for (const { version } of processes) {
    // A process written for schema level V cannot run past a breaking migration after V.
    const breaking = MIGRATIONS.find(
      (m) => m.breaking && m.version > version && m.version <= applyingThrough,
    );
    if (breaking !== undefined) {
      incompatible.push({
        version,
        why: `written for schema level ${version}: migration ${breaking.version} (${breaking.name}) ${
          pending.includes(breaking.version) ? 'would break it' : 'already did'
        }; stop or upgrade those processes first`,
      });
    }
  }
  return {
    schema,
    applied,
    pending,
    breakingPending,
    processes,
    unnamedConnections,
    incompatible,
    compatible: incompatible.length === 0,
  };
}
