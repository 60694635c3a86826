import { appendChanges, chainKeyHash, requireAuditChain } from './audit.js';
import type { SupportDb } from './db.js';
import { auditedKey, type KeyForm, keyForm } from './key-form.js';
import { SupportRefusal } from './refusal.js';
import { scrubText } from './scrub.js';
import { noSecretHelp } from './secret.js';
import { forgetKeySql, forgottenByKeySql, forgottenTableExistsSql, runsByKeySql } from './sql.js';

export interface ForgetRequest {
  readonly key: string;
  readonly tenant?: string | undefined;
  readonly tool?: string | undefined;
  /** Who forgets: the CLI's --by, the console's signed-in identity. Never empty. */
  readonly by: string;
  readonly reason?: string | undefined;
  /** Only list what would be deleted; change nothing. */
  readonly dryRun: boolean;
  readonly secret: string | undefined;
}

export interface ForgottenRun {
  readonly runId: string;
  readonly tenant: string;
  readonly tool: string;
  /** When it was deleted; null in a dry run. */
  readonly forgottenAt: Date | null;
}

export interface ForgetOutcome {
  readonly dryRun: boolean;
  readonly form: KeyForm;
  /** How the audit records the key (its telemetry attribute and value); null when it cannot (no secret). */
  readonly recordedKey: { readonly attribute: string; readonly value: string } | null;
  readonly runs: readonly ForgottenRun[];
}

/**
 * Deletes a key's runs and records each deletion (who, when, why, the key as telemetry shows it) in one statement,
 * and appends one entry per run to the audit chain in the same transaction; as a dry run, lists the runs it would
 * delete.
 */
export async function forgetKey(
  db: SupportDb,
  schema: string,
  request: ForgetRequest,
): Promise<ForgetOutcome> {
  if (request.by.trim() === '')
    throw new SupportRefusal('invalid', 'Forgetting names who did it: give the operator (--by WHO).');
  const form = keyForm(request.key, request.secret);
  const recordedKey = auditedKey(form);
  const params = [request.key, request.tenant ?? null, request.tool ?? null];
  if (request.dryRun) {
    const rows = await db.query<{ id: string; tenant_id: string; tool_name: string }>(
      runsByKeySql(schema),
      params,
    );
    const runs = rows.map((r) => ({
      runId: r.id,
      tenant: r.tenant_id,
      tool: r.tool_name,
      forgottenAt: null,
    }));
    return { dryRun: true, form, recordedKey, runs };
  }
  const [audit] = await db.query<{ exists: boolean }>(forgottenTableExistsSql, [schema]);
  if (!audit?.exists) {
    throw new SupportRefusal(
      'not_migrated',
      `Schema "${schema}" has no forget audit table yet. Run \`tool-ledger migrate --schema ${schema}\`, then forget again.`,
    );
  }
  if (recordedKey === null) {
    throw new SupportRefusal(
      'no_secret',
      `This key may hold personal data, so the audit records only its HMAC, and there is no secret to make it: ${noSecretHelp(schema)}, then forget again.`,
    );
  }
  await requireAuditChain(db, schema, 'forget');
  const keyHash = await chainKeyHash(db, schema, request.key);
  const rows = await db.transaction(async (tx) => {
    // The intents as they were, for the chain: the delete's own audit row keeps no fingerprint.
    const before = await tx.query<{ id: string; parameter_hash: string }>(runsByKeySql(schema), params);
    const fingerprints = new Map(before.map((r) => [r.id, r.parameter_hash]));
    const gone = await tx.query<{ run_id: string; tenant_id: string; tool_name: string; forgotten_at: Date }>(
      forgetKeySql(schema),
      [...params, recordedKey.attribute, recordedKey.value, request.by, request.reason ?? null],
    );
    await appendChanges(
      tx,
      schema,
      { action: 'forget', actor: request.by, reason: request.reason ?? null, keyHash, detail: null },
      gone.map((r) => ({
        runId: r.run_id,
        tenant: r.tenant_id,
        tool: r.tool_name,
        fingerprint: fingerprints.get(r.run_id) ?? null,
      })),
    );
    return gone;
  });
  const runs = rows.map((r) => ({
    runId: r.run_id,
    tenant: r.tenant_id,
    tool: r.tool_name,
    forgottenAt: r.forgotten_at as Date | null,
  }));
  return { dryRun: false, form, recordedKey, runs };
}

/** A forget audit record as support reads it: the reason is free text someone typed, so it is scrubbed. */
export interface ForgottenRecord {
  readonly runId: string;
  readonly tenant: string;
  readonly tool: string;
  readonly forgottenBy: string;
  readonly forgottenAt: Date;
  readonly reason: string | null;
}

/**
 * The audit records of a key's forgotten runs, so support can say a run was forgotten rather than never claimed.
 * The audit holds the key in its telemetry form (raw when safe, else its HMAC): without the secret an unsafe key
 * cannot be looked up, and a key hashed before a rotation of the secret no longer matches.
 */
export async function forgottenRecords(
  db: SupportDb,
  schema: string,
  key: string,
  secret: string | undefined,
  tenant?: string,
  tool?: string,
): Promise<ForgottenRecord[]> {
  const [audit] = await db.query<{ exists: boolean }>(forgottenTableExistsSql, [schema]);
  if (!audit?.exists) return [];
  const recorded = auditedKey(keyForm(key, secret));
  if (recorded === null) return [];
  const rows = await db.query<{
    run_id: string;
    tenant_id: string;
    tool_name: string;
    forgotten_by: string;
    forgotten_at: Date;
    reason: string | null;
  }>(forgottenByKeySql(schema), [recorded.attribute, recorded.value, tenant ?? null, tool ?? null]);
  return rows.map((row) => ({
    runId: row.run_id,
    tenant: row.tenant_id,
    tool: row.tool_name,
    forgottenBy: row.forgotten_by,
    forgottenAt: row.forgotten_at,
    reason: row.reason === null ? null : scrubText(row.reason),
  }));
}
