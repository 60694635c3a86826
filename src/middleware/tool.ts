import { randomUUID } from 'node:crypto';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { checkSeconds } from '../config.js';
import { ToolFailure, ToolLedgerError } from '../contract/errors.js';
import { parameterHash } from '../contract/fingerprint.js';
import { NotJsonError, toJsonValue } from '../contract/json.js';
import { assertStorableId, assertValidKey } from '../contract/keys.js';
import type { CallScope, Decision, SpanRef } from '../contract/observer.js';
import type {
  CallContext,
  CallInputOf,
  HandlerContext,
  InvokeReport,
  JobStatus,
  Outcome,
  RejectedReason,
  ToolKind,
  ToolOptions,
} from '../contract/types.js';
import { type ClaimRow, leaseRemainingMs } from '../ledger/run-row.js';
import { newLeaseOwner } from '../ledger/store.js';
import { judgeClaim } from './decide.js';
import { createExecutor } from './execute.js';
import type { CallFacts } from './facts.js';
import { replayedFailure } from './failures.js';
import { jobStatusOf } from './job-status.js';
import type { LedgerRuntime } from './runtime.js';
import { validateInput } from './validate.js';

const TOOL_NAME = /^[\p{L}\p{N}_.\-:/]{1,128}$/u;
const KINDS: readonly ToolKind[] = ['read', 'mutation', 'job'];
const MAX_RACE_RETRIES = 50;

/** A tool wrapped by the ledger. `call` returns the value; `invoke` also says how it was obtained. */
export interface LedgerTool<TCallInput, TValue> {
  readonly name: string;
  readonly kind: ToolKind;
  readonly description: string | undefined;
  readonly title: string | undefined;
  readonly destructive: boolean;
  /** The Standard Schema validator, for adapters that publish a JSON schema. */
  readonly input: StandardSchemaV1 | undefined;
  call(input: TCallInput, context?: CallContext): Promise<TValue>;
  invoke(input: TCallInput, context?: CallContext): Promise<InvokeReport<TValue>>;
  /**
   * For jobs: the current status of a job by id, within the tenant. Undefined when no such job exists there.
   */
  getJob(jobId: string, context?: Pick<CallContext, 'tenant'>): Promise<TValue | undefined>;
}

function outcomeOf(error: unknown): { outcome: Outcome; rejectedReason?: RejectedReason } {
  if (!(error instanceof ToolLedgerError)) return { outcome: 'failed' };
  switch (error.code) {
    case 'KEY_REQUIRED':
      return { outcome: 'rejected', rejectedReason: 'key_required' };
    case 'KEY_INVALID':
      return { outcome: 'rejected', rejectedReason: 'key_invalid' };
    case 'INPUT_INVALID':
      return { outcome: 'rejected', rejectedReason: 'input_invalid' };
    case 'KEY_REUSED':
      return { outcome: 'conflict' };
    case 'IN_PROGRESS':
      return { outcome: 'in_progress' };
    default:
      return { outcome: error instanceof ToolFailure && error.replayed ? 'replayed' : 'failed' };
  }
}

function spanOf(row: ClaimRow): SpanRef | undefined {
  return row.trace_id && row.span_id ? { traceId: row.trace_id, spanId: row.span_id } : undefined;
}

function checkDefinition(definition: ToolOptions<StandardSchemaV1 | undefined, unknown>): void {
  const invalid = (message: string) => new ToolLedgerError('CONFIG_INVALID', message);
  if (typeof definition?.name !== 'string' || !TOOL_NAME.test(definition.name)) {
    throw invalid(
      `Tool name ${JSON.stringify(definition?.name)} is invalid: use 1-128 letters, digits and _ . - : / (for example "create_invoice").`,
    );
  }
  if (!KINDS.includes(definition.kind)) {
    throw invalid(
      `Tool "${definition.name}" has kind ${JSON.stringify(definition.kind)}; use 'read', 'mutation' or 'job'.`,
    );
  }
  if (typeof definition.handler !== 'function')
    throw invalid(`Tool "${definition.name}" needs a handler function.`);
  if (definition.input !== undefined && typeof definition.input?.['~standard']?.validate !== 'function') {
    throw invalid(
      `Tool "${definition.name}": input must be a Standard Schema validator (zod 4, valibot, arktype).`,
    );
  }
  if (definition.transactional && definition.kind !== 'mutation') {
    throw invalid(`Tool "${definition.name}": transactional is only supported for kind 'mutation'.`);
  }
}

export function createTool<TSchema extends StandardSchemaV1 | undefined, TOutput>(
  runtime: LedgerRuntime,
  definition: ToolOptions<TSchema, TOutput>,
): LedgerTool<CallInputOf<TSchema>, unknown> {
  checkDefinition(definition as ToolOptions<StandardSchemaV1 | undefined, unknown>);
  const { config, store, notifier, observer } = runtime;
  const name = definition.name;
  const kind = definition.kind;
  const leaseSeconds = checkSeconds(
    `${name}.leaseSeconds`,
    definition.leaseSeconds,
    config.leaseSeconds,
    0.05,
  );
  const waitMs = checkSeconds(`${name}.waitSeconds`, definition.waitSeconds, config.waitSeconds, 0) * 1000;
  const ttlSeconds = checkSeconds(`${name}.ttlSeconds`, definition.ttlSeconds, config.ttlSeconds, 0);
  const volatileFields = [...(definition.volatileFields ?? [])];
  const isFinalError = definition.isFinalError ?? (() => false);
  const allowLeaseTakeover = kind !== 'job' || definition.resumeAbandoned !== false;
  const handler = definition.handler as (input: unknown, ctx: HandlerContext) => unknown;

  const execute = createExecutor({
    runtime,
    name,
    handler,
    transactional: definition.transactional === true,
    isFinalError,
    leaseSeconds,
    ttlSeconds,
  });

  const decide = async (input: unknown, context: CallContext, scope: CallScope, facts: CallFacts) => {
    const tenant = context.tenant ?? 'default';
    assertStorableId(tenant, 'tenant', name);
    if (context.user !== undefined) assertStorableId(context.user, 'user', name);
    if (kind !== 'read') {
      if (context.key === undefined || context.key === null) {
        throw new ToolLedgerError(
          'KEY_REQUIRED',
          `Tool "${name}" changes the world and needs an idempotency key. Pass { key } naming this intent: reuse the same key when retrying the same request, and a new key for a new or changed request.`,
        );
      }
      assertValidKey(context.key, name);
    }
    const validated = await validateInput(definition.input, input, name);

    if (kind === 'read') {
      const started = performance.now();
      scope.handlerStarted();
      try {
        const value = await handler(validated, {
          tool: name,
          tenant,
          key: context.key,
          user: context.user,
          toolCallId: context.toolCallId,
          attempt: 1,
          jobId: undefined,
          signal: new AbortController().signal,
          db: undefined,
          renewLease: async () => {},
        });
        return {
          outcome: 'executed' as const,
          value,
          tenant,
          paramsHash: undefined,
          completedAt: new Date(),
          row: undefined,
        };
      } finally {
        facts.executionSeconds = (performance.now() - started) / 1000;
        scope.handlerFinished();
      }
    }

    let json: ReturnType<typeof toJsonValue>;
    try {
      json = toJsonValue(validated, { storable: false });
    } catch (error) {
      if (!(error instanceof NotJsonError)) throw error;
      throw new ToolLedgerError(
        'INPUT_INVALID',
        `Input for tool "${name}" is not JSON (${error.message}). Nothing was saved; pass JSON-safe values.`,
        { cause: error, issues: [{ message: error.reason, path: [error.path] }] },
      );
    }
    const paramsHash = parameterHash(json, volatileFields);
    scope.setParamsHash(paramsHash);
    const key = context.key as string;
    const span = scope.spanRef;
    const request = {
      tenant,
      tool: name,
      key,
      user: context.user,
      paramsHash,
      leaseOwner: newLeaseOwner(),
      leaseSeconds,
      ttlSeconds,
      traceId: span?.traceId,
      spanId: span?.spanId,
      jobId: kind === 'job' ? `job_${randomUUID()}` : undefined,
      allowLeaseTakeover,
      wouldWait: kind === 'mutation' && waitMs > 0,
    };

    const waitStarted = performance.now();
    let backoffMs = 20;
    let listening = false;
    for (let races = 0; ; ) {
      const since = notifier.mark();
      const row = await store.claim(request, scope.recordLedgerOperation);
      if (!row) {
        // A parallel insert committed between this statement's snapshot and its insert: claim again.
        if (++races > MAX_RACE_RETRIES) throw contention();
        continue;
      }
      facts.attempt = row.attempt;
      if (row.job_id) facts.jobId = row.job_id;
      const verdict = judgeClaim(row, request);
      const replayOf = (value: unknown) => ({
        outcome: 'replayed' as const,
        value,
        tenant,
        paramsHash,
        completedAt: row.completed_at ?? undefined,
        row,
      });
      const waited = () => {
        facts.waitedMs = Math.round(performance.now() - waitStarted);
        return facts.waitedMs;
      };
      switch (verdict.kind) {
        case 'won': {
          if (races > 0 || backoffMs > 20) waited();
          if (kind === 'job') {
            const work = execute(row, validated, context, tenant, scope, facts).catch(() => {});
            void runtime.track(work);
            return {
              outcome: 'executed' as const,
              value: jobStatusOf({ ...row, status: 'in_progress' }),
              tenant,
              paramsHash,
              completedAt: undefined,
              row,
            };
          }
          const done = await execute(row, validated, context, tenant, scope, facts);
          return {
            outcome: 'executed' as const,
            value: done.value,
            tenant,
            paramsHash,
            completedAt: done.completedAt,
            row,
          };
        }
        case 'replay':
          facts.original = spanOf(row);
          if (races > 0 || backoffMs > 20) waited();
          return replayOf(kind === 'job' ? jobStatusOf(row) : row.result_json);
        case 'final_failure':
          facts.original = spanOf(row);
          if (kind === 'job') return replayOf(jobStatusOf(row));
          throw replayedFailure(row.error_json!);
        case 'conflict':
          facts.original = spanOf(row);
          await store.recordConflict(row.id).catch(() => {});
          throw new ToolLedgerError(
            'KEY_REUSED',
            verdict.reason === 'params_mismatch'
              ? `This idempotency key was already used for tool "${name}" with different arguments. Use a new key for a new or changed request; reuse a key only to retry the exact same request.`
              : `This idempotency key was already used for tool "${name}" by a different user. Keys must be unique per intent; generate a new key.`,
            { conflictReason: verdict.reason },
          );
        case 'abandoned':
          facts.original = spanOf(row);
          return replayOf(jobStatusOf(row));
        case 'running': {
          facts.original = spanOf(row);
          if (kind === 'job') return replayOf(jobStatusOf(row));
          const remaining = waitMs - (performance.now() - waitStarted);
          if (remaining <= 0 || context.signal?.aborted) {
            waited();
            const lease = leaseRemainingMs(row);
            throw new ToolLedgerError(
              'IN_PROGRESS',
              `Tool "${name}" is still running the first call with this idempotency key. Retry with the same key in a moment to get its result; do not use a new key, or the action may run twice.`,
              { retryAfterMs: Math.round(Math.min(Math.max(lease, 100), 1000)) },
            );
          }
          if (!listening) {
            listening = true;
            await notifier.ensureListening();
            // Only a registration made while listening is sure to be heard: claim, and register, again.
            continue;
          }
          if (!row.waiting) {
            // The run finished between the claim's snapshot and its registration: claim again to replay it.
            if (++races > MAX_RACE_RETRIES) throw contention();
            continue;
          }
          const jitter = 0.8 + Math.random() * 0.4;
          await notifier.wait(
            row.id,
            Math.min(remaining, backoffMs * jitter, leaseRemainingMs(row) + 5),
            context.signal,
            since,
          );
          backoffMs = Math.min(backoffMs * 2, 500);
          waited();
          continue;
        }
        case 'raced':
          if (++races > MAX_RACE_RETRIES) throw contention();
          continue;
      }
    }
  };

  const contention = () =>
    new ToolLedgerError(
      'LEDGER_UNAVAILABLE',
      `Tool "${name}": the key kept changing under concurrent claims. Retry the call with the same key.`,
    );

  const invoke = async (input: unknown, context: CallContext = {}): Promise<InvokeReport<unknown>> => {
    runtime.assertOpen(name);
    const ctx = context ?? {};
    const scope = observer.startCall({
      tool: name,
      kind,
      tenant: typeof ctx.tenant === 'string' ? ctx.tenant : 'default',
      key: typeof ctx.key === 'string' ? ctx.key : undefined,
      user: typeof ctx.user === 'string' ? ctx.user : undefined,
      toolCallId: typeof ctx.toolCallId === 'string' ? ctx.toolCallId : undefined,
      input,
    });
    const facts: CallFacts = {};
    const end = (decision: Decision) => {
      try {
        scope.end(decision);
      } catch {
        // Telemetry never changes a call's outcome.
      }
    };
    return runtime.track(
      scope.run(async () => {
        try {
          const result = await decide(input, ctx, scope, facts);
          end({ ...facts, outcome: result.outcome, result: result.value });
          return {
            outcome: result.outcome,
            value: result.value,
            tool: name,
            kind,
            tenant: result.tenant,
            key: ctx.key,
            paramsHash: result.paramsHash,
            attempt: result.row?.attempt ?? (kind === 'read' ? 0 : 1),
            waitedMs: facts.waitedMs ?? 0,
            completedAt: result.completedAt,
            jobId: result.row?.job_id ?? undefined,
            originalSpan: result.outcome === 'replayed' && result.row ? spanOf(result.row) : undefined,
          };
        } catch (error) {
          const { outcome, rejectedReason } = outcomeOf(error);
          end({
            ...facts,
            outcome,
            rejectedReason,
            conflictReason: error instanceof ToolLedgerError ? error.conflictReason : undefined,
            error,
          });
          throw error;
        }
      }),
    );
  };

  return Object.freeze({
    name,
    kind,
    description: definition.description,
    title: definition.title,
    destructive: definition.destructive ?? false,
    input: definition.input,
    invoke,
    call: async (input: unknown, context?: CallContext) => (await invoke(input, context)).value,
    async getJob(jobId: string, context: Pick<CallContext, 'tenant'> = {}): Promise<JobStatus | undefined> {
      runtime.assertOpen(name);
      if (kind !== 'job') {
        throw new ToolLedgerError(
          'CONFIG_INVALID',
          `Tool "${name}" is a ${kind}, not a job; getJob is only for kind 'job'.`,
        );
      }
      const tenant = context.tenant ?? 'default';
      assertStorableId(tenant, 'tenant', name);
      if (typeof jobId !== 'string' || jobId.length === 0 || jobId.length > 255) return undefined;
      const row = await store.findJob(tenant, name, jobId);
      return row ? jobStatusOf(row) : undefined;
    },
  }) as LedgerTool<CallInputOf<TSchema>, unknown>;
}
