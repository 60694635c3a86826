import type { Queryable } from '../../contract/types.js';
import { AUDIT_COLUMNS, entryHash, GENESIS_HASH, type StoredAuditEntry, storedEntry } from './chain.js';
import { auditTable } from './tables.js';

/** Where a chain broke: the first entry whose link or hash does not hold. */
export interface AuditBreak {
  readonly tenant: string;
  /** The entry at which the chain stops holding. */
  readonly id: string;
  /**
   * `missing`: its `prev_hash` is not the hash of the entry before it, so an entry between them was deleted (or
   * the first entries, when it is the tenant's first); `altered`: its fields no longer give its hash.
   */
  readonly kind: 'missing' | 'altered';
  readonly detail: string;
}

export interface AuditVerification {
  /** Entries read, over every tenant verified. */
  readonly entries: number;
  readonly tenants: number;
  /** The newest hash of each tenant's chain: keep it elsewhere to detect a deletion of the newest entries too. */
  readonly heads: ReadonlyMap<string, { readonly id: string; readonly hash: string }>;
  /** The first break of each tenant whose chain does not hold; empty when every chain holds. */
  readonly breaks: readonly AuditBreak[];
}

const PAGE = 1000;

/**
 * Recomputes every chain (or one tenant's), page by page in id order, and names the first break of each tenant.
 * A deleted entry leaves a gap in the links; an altered one a hash that no longer matches. Deleting the newest
 * entries leaves a shorter chain that holds: compare the heads with a copy kept elsewhere.
 */
export async function verifyAudit(
  db: Queryable,
  schema: string,
  tenant?: string,
): Promise<AuditVerification> {
  const t = auditTable(schema);
  const heads = new Map<string, { id: string; hash: string }>();
  const broken = new Map<string, AuditBreak>();
  let entries = 0;
  let after: { tenant: string; id: string } = { tenant: '', id: '-1' };
  for (;;) {
    const { rows } = await db.query<Record<string, unknown>>(
      `SELECT ${AUDIT_COLUMNS} FROM ${t} a
WHERE ($1::text IS NULL OR a.tenant_id = $1::text) AND (a.tenant_id, a.id) > ($2::text, $3::bigint)
ORDER BY a.tenant_id, a.id
LIMIT ${PAGE}`,
      [tenant ?? null, after.tenant, after.id],
    );
    for (const row of rows) {
      const entry = storedEntry(row);
      entries++;
      check(entry, heads.get(entry.tenant), broken);
      heads.set(entry.tenant, { id: entry.id, hash: entry.hash });
    }
    if (rows.length < PAGE) break;
    const last = storedEntry(rows.at(-1)!);
    after = { tenant: last.tenant, id: last.id };
  }
  return { entries, tenants: heads.size, heads, breaks: [...broken.values()] };
}

function check(
  entry: StoredAuditEntry,
  previous: { id: string; hash: string } | undefined,
  broken: Map<string, AuditBreak>,
): void {
  if (broken.has(entry.tenant)) return;
  const expected = previous?.hash ?? GENESIS_HASH;
  if (entry.prevHash !== expected) {
    broken.set(entry.tenant, {
      tenant: entry.tenant,
      id: entry.id,
      kind: 'missing',
      detail: previous
        ? `entry ${entry.id} links to ${entry.prevHash.slice(0, 12)}…, not to entry ${previous.id} before it: an entry between them was deleted`
        : `entry ${entry.id} is the tenant's first left but links to ${entry.prevHash.slice(0, 12)}…: the entries before it were deleted`,
    });
    return;
  }
  if (entryHash(entry.prevHash, entry) !== entry.hash) {
    broken.set(entry.tenant, {
      tenant: entry.tenant,
      id: entry.id,
      kind: 'altered',
      detail: `entry ${entry.id}'s fields no longer give its hash: it was changed after it was written`,
    });
  }
}
