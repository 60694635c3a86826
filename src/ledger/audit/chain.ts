import { createHmac } from 'node:crypto';
import { canonicalJson } from '../../contract/canonical-json.js';
import { sha256Hex } from '../../contract/sha256.js';
import type { Queryable } from '../../contract/types.js';
import { quoteLiteral } from '../migrations.js';
import { loadDeploymentSecret } from '../settings.js';
import { epochMs } from '../sql/columns.js';
import { auditTable } from './tables.js';

/** What a person did to a run: the four actions the chain records. */
export const AUDIT_ACTIONS = ['approve', 'decline', 'forget', 'resolve'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One entry as it is appended: every field the hash covers. */
export interface AuditEntry {
  readonly tenant: string;
  /** When, by the database clock (whole milliseconds: the hash covers its ISO text). */
  readonly at: Date;
  readonly actor: string;
  readonly action: AuditAction;
  readonly tool: string;
  /** The key's HMAC under the schema's stored secret (`auditKeyHash`): the chain never holds a raw key. */
  readonly keyHash: string;
  readonly runId: string | null;
  readonly fingerprint: string | null;
  readonly approvedFingerprint: string | null;
  readonly reason: string | null;
  /** JSON of strings, booleans and objects of them (numbers change form in jsonb, so none are hashed). */
  readonly detail: Readonly<Record<string, unknown>> | null;
}

/** A stored entry: its id, and its place in the chain. */
export interface StoredAuditEntry extends AuditEntry {
  readonly id: string;
  readonly prevHash: string;
  readonly hash: string;
}

/** The `prev_hash` of a tenant's first entry. */
export const GENESIS_HASH = '0'.repeat(64);

// Any stable constant: the chain's lock, per schema and tenant (the claim's key lock is 0x7711).
const AUDIT_LOCK_CLASS = 0x7712;

/**
 * An entry's hash: SHA-256 of the previous entry's hash, a newline, and the RFC 8785 canonical JSON of the entry's
 * fields (the id is left out: it only orders). Changing any field, or the entry before it, changes it.
 */
export function entryHash(prevHash: string, entry: AuditEntry): string {
  const fields = {
    tenant: entry.tenant,
    at: entry.at.toISOString(),
    actor: entry.actor,
    action: entry.action,
    tool: entry.tool,
    keyHash: entry.keyHash,
    runId: entry.runId,
    fingerprint: entry.fingerprint,
    approvedFingerprint: entry.approvedFingerprint,
    reason: entry.reason,
    detail: entry.detail,
  };
  return sha256Hex(`${prevHash}\n${canonicalJson(fields)}`);
}

/**
 * A key as the chain records it: HMAC-SHA256 under the deployment's secret stored in the schema (made at the first
 * need, as telemetry makes it), the value `tool-ledger hash-key` prints for the stored secret.
 */
export async function auditKeyHash(db: Queryable, schema: string, key: string): Promise<string> {
  const stored = await loadDeploymentSecret(db, schema);
  if (stored.secret === undefined) {
    throw new Error(`the audit chain hashes keys under the deployment's secret, and ${stored.missing}`);
  }
  return createHmac('sha256', stored.secret).update(key, 'utf8').digest('hex');
}

/**
 * Appends an entry to its tenant's chain, inside the caller's transaction (the decision it records commits with
 * it, or neither does). The tenant's chain lock, held to the end of the transaction, orders appends, so each entry
 * links to the one before; the unique `(tenant_id, prev_hash)` refuses a fork even without it. Returns the entry.
 */
export async function appendAudit(
  tx: Queryable,
  schema: string,
  entry: Omit<AuditEntry, 'at'> & { readonly at?: Date },
): Promise<StoredAuditEntry> {
  const t = auditTable(schema);
  await tx.query(
    `SELECT pg_advisory_xact_lock(${AUDIT_LOCK_CLASS}, hashtext(${quoteLiteral(schema)} || chr(31) || $1::text))`,
    [entry.tenant],
  );
  const { rows } = await tx.query<{ hash: string | null; now_ms: number }>(
    `SELECT (SELECT a.hash FROM ${t} a WHERE a.tenant_id = $1::text ORDER BY a.id DESC LIMIT 1) AS hash,
  ${epochMs('clock_timestamp()')} AS now_ms`,
    [entry.tenant],
  );
  const prevHash = rows[0]?.hash ?? GENESIS_HASH;
  const full: AuditEntry = { ...entry, at: entry.at ?? new Date(Number(rows[0]!.now_ms)) };
  const hash = entryHash(prevHash, full);
  const inserted = await tx.query<{ id: string }>(
    `INSERT INTO ${t} (tenant_id, at, actor, action, tool_name, key_hash, run_id, fingerprint, approved_fingerprint,
  reason, detail, prev_hash, hash)
VALUES ($1::text, $2::timestamptz, $3::text, $4::text, $5::text, $6::text, $7::bigint, $8::text, $9::text, $10::text,
  $11::jsonb, $12::text, $13::text)
RETURNING id::text AS id`,
    [
      full.tenant,
      full.at.toISOString(),
      full.actor,
      full.action,
      full.tool,
      full.keyHash,
      full.runId,
      full.fingerprint,
      full.approvedFingerprint,
      full.reason,
      full.detail === null ? null : JSON.stringify(full.detail),
      prevHash,
      hash,
    ],
  );
  return { ...full, id: inserted.rows[0]!.id, prevHash, hash };
}

/** The columns of a stored entry, as `StoredAuditEntry` reads them. */
export const AUDIT_COLUMNS = `a.id::text AS id, a.tenant_id, ${epochMs('a.at')} AS at_ms, a.actor, a.action, a.tool_name,
  a.key_hash, a.run_id::text AS run_id, a.fingerprint, a.approved_fingerprint, a.reason, a.detail, a.prev_hash, a.hash`;

/** A row of `AUDIT_COLUMNS` as an entry. */
export function storedEntry(row: Record<string, unknown>): StoredAuditEntry {
  return {
    id: String(row.id),
    tenant: String(row.tenant_id),
    at: new Date(Number(row.at_ms)),
    actor: String(row.actor),
    action: row.action as AuditAction,
    tool: String(row.tool_name),
    keyHash: String(row.key_hash),
    runId: (row.run_id as string | null) ?? null,
    fingerprint: (row.fingerprint as string | null) ?? null,
    approvedFingerprint: (row.approved_fingerprint as string | null) ?? null,
    reason: (row.reason as string | null) ?? null,
    detail: (row.detail as Record<string, unknown> | null) ?? null,
    prevHash: String(row.prev_hash),
    hash: String(row.hash),
  };
}
