import { appendChanges, chainKeyHash, requireAuditChain } from './audit.js';
import type { SupportDb } from './db.js';
import { auditedKey, type KeyForm, keyForm } from './key-form.js';
import { SupportRefusal } from './refusal.js';
import { scrubText } from './scrub.js';
import { resolvedByRunSql } from './search-sql.js';
import { noSecretHelp } from './secret.js';
import { resolvedTableExistsSql, resolveUnknownSql, unknownRunsByKeySql } from './sql.js';

/** How an operator settles an unknown outcome: the effect happened (its result), it failed for good, or run it again. */
export type Resolution =
  | { readonly kind: 'result'; readonly resultJson: string }
  | { readonly kind: 'failed'; readonly message: string }
  | { readonly kind: 'rerun' };

/** What the next call with the key gets once a run is settled this way. */
export const RESOLUTION_EFFECT = {
  result: 'replays the given result',
  failed: 'replays this final failure',
  rerun: 'runs the tool again',
} as const satisfies Record<Resolution['kind'], string>;

/** A resolution from its parts, checked: exactly one of a result (JSON), a failure message and a rerun. */
export function resolutionOf(values: {
  result?: string | undefined;
  failed?: string | undefined;
  rerun?: boolean | undefined;
}): Resolution {
  const given = [values.result !== undefined, values.failed !== undefined, values.rerun === true].filter(
    Boolean,
  );
  if (given.length !== 1) {
    throw new SupportRefusal(
      'invalid',
      'A resolution is exactly one of: a result (the effect happened: this JSON is its result), a failure message (it did not happen and must not be retried: callers get this final failure) or a rerun (it did not happen: the next call with the key runs it again).',
    );
  }
  if (values.result !== undefined) {
    try {
      JSON.parse(values.result);
    } catch (error) {
      throw new SupportRefusal(
        'invalid',
        `The result must be JSON, as the tool would have returned it (for example {"chargeId":"ch_1"}): ${error instanceof Error ? error.message : String(error)}.`,
      );
    }
    return { kind: 'result', resultJson: values.result };
  }
  if (values.failed !== undefined) {
    if (values.failed.trim() === '')
      throw new SupportRefusal('invalid', 'A failure needs a message that callers will read.');
    return { kind: 'failed', message: values.failed };
  }
  return { kind: 'rerun' };
}

/** The stored error a resolution leaves: a final ToolFailure, or a note on a retryable one. */
function storedErrorOf(resolution: Resolution, by: string): string | null {
  switch (resolution.kind) {
    case 'result':
      return null;
    case 'failed':
      return JSON.stringify({
        name: 'ToolFailure',
        code: 'TOOL_FAILED',
        message: resolution.message,
        final: true,
        reason: 'resolved_by_operator',
      });
    case 'rerun':
      return JSON.stringify({
        name: 'ToolLedgerError',
        code: 'OUTCOME_UNKNOWN',
        message: `Settled by ${by} as not done: the next call with this key runs it again.`,
        final: false,
      });
  }
}

export interface ResolveRequest {
  readonly key: string;
  readonly tenant?: string | undefined;
  readonly tool?: string | undefined;
  readonly resolution: Resolution;
  /** Who decides: the CLI's --by, the console's signed-in identity. Never empty. */
  readonly by: string;
  readonly reason?: string | undefined;
  /** Only say which run would be settled; change nothing. */
  readonly dryRun: boolean;
  /** The key-hash secret (support/secret.ts), to record an unsafe key by its HMAC. */
  readonly secret: string | undefined;
}

export interface ResolvedRun {
  readonly runId: string;
  readonly tenant: string;
  readonly tool: string;
  /** When it was settled; null in a dry run. */
  readonly resolvedAt: Date | null;
}

export interface ResolveOutcome {
  readonly dryRun: boolean;
  readonly form: KeyForm;
  /** The run settled (or, in a dry run, that would be); empty when it left status unknown meanwhile. */
  readonly runs: readonly ResolvedRun[];
}

const scopeWords = (r: ResolveRequest) =>
  `${r.tenant ? ` in tenant ${JSON.stringify(r.tenant)}` : ''}${r.tool ? ` of tool ${JSON.stringify(r.tool)}` : ''}`;

/**
 * Settles one run in status `unknown` (an interrupted effect whose rule was `'fail'`), with an audit record of who,
 * when and how, in one statement, and its entry in the audit chain in the same transaction; or, as a dry run, names the run it would settle. Refuses when the key names no
 * unknown run or more than one, and when there is no actor.
 */
export async function resolveUnknown(
  db: SupportDb,
  schema: string,
  request: ResolveRequest,
): Promise<ResolveOutcome> {
  if (request.by.trim() === '')
    throw new SupportRefusal('invalid', 'A resolution names who made it: give the operator (--by WHO).');
  const params = [request.key, request.tenant ?? null, request.tool ?? null];
  const form = keyForm(request.key, request.secret);
  const candidates = await db.query<{
    id: string;
    tenant_id: string;
    tool_name: string;
    parameter_hash: string;
  }>(unknownRunsByKeySql(schema), params);
  if (candidates.length === 0) {
    throw new SupportRefusal(
      'not_found',
      `No run in status unknown for this key${scopeWords(request)} in schema "${schema}". List them with \`tool-ledger list --status unknown\`.`,
    );
  }
  if (candidates.length > 1) {
    throw new SupportRefusal(
      'ambiguous',
      `This key has ${candidates.length} unknown runs (${candidates.map((c) => `${c.tenant_id}/${c.tool_name}`).join(', ')}): name one with --tenant and --tool.`,
    );
  }
  if (request.dryRun) {
    const runs = candidates.map((c) => ({
      runId: c.id,
      tenant: c.tenant_id,
      tool: c.tool_name,
      resolvedAt: null,
    }));
    return { dryRun: true, form, runs };
  }
  const [audit] = await db.query<{ exists: boolean }>(resolvedTableExistsSql, [schema]);
  if (!audit?.exists) {
    throw new SupportRefusal(
      'not_migrated',
      `Schema "${schema}" has no resolve audit table yet. Run \`tool-ledger migrate --schema ${schema}\`, then resolve again.`,
    );
  }
  const recorded = auditedKey(form);
  if (recorded === null) {
    throw new SupportRefusal(
      'no_secret',
      `This key may hold personal data, so the audit records only its HMAC, and there is no secret to make it: ${noSecretHelp(schema)}, then resolve again.`,
    );
  }
  await requireAuditChain(db, schema, 'resolve');
  const keyHash = await chainKeyHash(db, schema, request.key);
  const { resolution } = request;
  const settled = await db.transaction(async (tx) => {
    const done = await tx.query<{ run_id: string; tenant_id: string; tool_name: string; resolved_at: Date }>(
      resolveUnknownSql(schema),
      [
        ...params,
        resolution.kind,
        resolution.kind === 'result' ? resolution.resultJson : null,
        storedErrorOf(resolution, request.by),
        recorded.attribute,
        recorded.value,
        request.by,
        request.reason ?? null,
      ],
    );
    const fingerprints = new Map(candidates.map((c) => [c.id, c.parameter_hash]));
    await appendChanges(
      tx,
      schema,
      {
        action: 'resolve',
        actor: request.by,
        reason: request.reason ?? null,
        keyHash,
        detail: { resolution: resolution.kind },
      },
      done.map((r) => ({
        runId: r.run_id,
        tenant: r.tenant_id,
        tool: r.tool_name,
        fingerprint: fingerprints.get(r.run_id) ?? null,
      })),
    );
    return done;
  });
  const runs = settled.map((r) => ({
    runId: r.run_id,
    tenant: r.tenant_id,
    tool: r.tool_name,
    resolvedAt: r.resolved_at,
  }));
  return { dryRun: false, form, runs };
}

/** One settlement of a run, as its audit records it; the reason (free text) scrubbed. */
export interface Settlement {
  readonly resolution: string;
  readonly by: string;
  readonly at: Date;
  readonly reason: string | null;
}

/** The settlements recorded for a run, oldest first; none before migration 7. */
export async function settlementsOf(db: SupportDb, schema: string, runId: string): Promise<Settlement[]> {
  const [table] = await db.query<{ exists: boolean }>(resolvedTableExistsSql, [schema]);
  if (!table?.exists) return [];
  const rows = await db.query<{
    resolution: string;
    resolved_by: string;
    resolved_at: Date;
    reason: string | null;
  }>(resolvedByRunSql(schema), [runId]);
  return rows.map((r) => ({
    resolution: r.resolution,
    by: r.resolved_by,
    at: r.resolved_at,
    reason: r.reason === null ? null : scrubText(r.reason),
  }));
}
