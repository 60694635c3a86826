import { type AuditAction, appendAudit, auditKeyHash, storedEntry } from '../ledger/audit/chain.js';
import { queryableOf, type SupportQuery } from './db.js';
import { SupportRefusal } from './refusal.js';
import { scrubText } from './scrub.js';
import { auditChainExistsSql } from './search-sql.js';
import { auditEntriesByRunSql } from './sql.js';

// Support's decisions (forget, resolve) in the audit chain of decisions (docs/ledger.md, "The audit chain"), beside
// the approvals and declines the ledger appends: one entry per run changed, in the transaction that changes it.

/** What support records of one run it changed. */
export interface ChangedRun {
  readonly runId: string;
  readonly tenant: string;
  readonly tool: string;
  /** The run's parameter hash, the intent it was; null when it could not be read. */
  readonly fingerprint: string | null;
}

/** Refuses a change when the schema has no audit chain yet (migration 11): nothing may change unaudited. */
export async function requireAuditChain(db: SupportQuery, schema: string, again: string): Promise<void> {
  const [chain] = await db.query<{ exists: boolean }>(auditChainExistsSql, [schema]);
  if (!chain?.exists) {
    throw new SupportRefusal(
      'not_migrated',
      `Schema "${schema}" has no audit chain yet (migration 11). Run \`tool-ledger migrate --schema ${schema}\`, then ${again} again.`,
    );
  }
}

/**
 * The key as the chain records it: its HMAC under the deployment's secret stored in the schema (made at the first
 * need, as the ledger makes it), so the chain never holds a raw key. Read before the change's transaction, which
 * must not roll back the secret's creation.
 */
export async function chainKeyHash(db: SupportQuery, schema: string, key: string): Promise<string> {
  try {
    return await auditKeyHash(queryableOf(db), schema, key);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('the audit chain hashes keys')) throw error;
    throw new SupportRefusal('no_secret', `Nothing was changed: ${error.message}.`);
  }
}

/**
 * Appends one entry per changed run, inside the change's transaction. Runs are appended by tenant, then run id, so
 * two changes spanning the same tenants take their chain locks in one order.
 */
export async function appendChanges(
  tx: SupportQuery,
  schema: string,
  change: {
    readonly action: Extract<AuditAction, 'forget' | 'resolve'>;
    readonly actor: string;
    readonly reason: string | null;
    readonly keyHash: string;
    readonly detail: Readonly<Record<string, string>> | null;
  },
  runs: readonly ChangedRun[],
): Promise<void> {
  const ordered = [...runs].sort(
    (a, b) =>
      (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0) || Number(BigInt(a.runId) - BigInt(b.runId)),
  );
  for (const run of ordered) {
    await appendAudit(queryableOf(tx), schema, {
      tenant: run.tenant,
      tool: run.tool,
      actor: change.actor,
      action: change.action,
      keyHash: change.keyHash,
      runId: run.runId,
      fingerprint: run.fingerprint,
      approvedFingerprint: null,
      reason: change.reason,
      detail: change.detail,
    });
  }
}

/** One entry of a run's audit history as support shows it: the reason (free text someone typed) scrubbed. */
export interface RunAuditEntry {
  readonly id: string;
  readonly action: AuditAction;
  readonly by: string;
  readonly at: Date;
  readonly reason: string | null;
  readonly fingerprint: string | null;
  readonly approvedFingerprint: string | null;
  readonly detail: Readonly<Record<string, unknown>> | null;
}

/** The audit chain's entries of one run, oldest first; none before migration 11. */
export async function auditEntriesOf(
  db: SupportQuery,
  schema: string,
  runId: string,
): Promise<RunAuditEntry[]> {
  const [chain] = await db.query<{ exists: boolean }>(auditChainExistsSql, [schema]);
  if (!chain?.exists) return [];
  const rows = await db.query<Record<string, unknown>>(auditEntriesByRunSql(schema), [runId]);
  return rows.map((row) => {
    const entry = storedEntry(row);
    return {
      id: entry.id,
      action: entry.action,
      by: entry.actor,
      at: entry.at,
      reason: entry.reason === null ? null : scrubText(entry.reason),
      fingerprint: entry.fingerprint,
      approvedFingerprint: entry.approvedFingerprint,
      detail: entry.detail,
    };
  });
}
