import { randomUUID } from 'node:crypto';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { type ResolvedToolConfig, resolveToolConfig } from '../config/tool.js';
import type { ApprovalRule } from '../contract/approval.js';
import { type OmitTree, omitTreeOf } from '../contract/canonical-json.js';
import { parameterHash } from '../contract/fingerprint.js';
import { NotJsonError } from '../contract/json.js';
import { assertStorableId, assertValidKey } from '../contract/keys.js';
import {
  type CallScope,
  type Decision,
  NOOP_SCOPE,
  noopObserver,
  type SpanRef,
} from '../contract/observer.js';
import type { RejectedReason } from '../contract/outcomes.js';
import type {
  CallContext,
  CallInputOf,
  InvokeReport,
  JobStatus,
  KeyedCallContext,
  ToolKind,
  ToolOptions,
} from '../contract/types.js';
import { newLeaseOwner } from '../ledger/fence.js';
import type { ClaimRequest } from '../ledger/store.js';
import { approvalSettings } from './approval-gate.js';
import { type Answer, type CallEnd, isRefusal, type Refusal, rejected } from './call-end.js';
import { createClaimLoop, spanOf } from './claim-loop.js';
import { createExecutor } from './execute.js';
import type { CallFacts } from './facts.js';
import { jobStarted, jobStatusOf } from './job-status.js';
import { inputNotJson, keyRequired } from './messages.js';
import { runRead } from './read.js';
import type { LedgerRuntime } from './runtime.js';
import { validateInput } from './validate.js';
import { RUN_BACKOFF, Waiter } from './wait.js';

/** The context argument of `call` and `invoke`: optional for read tools, with a required key otherwise. */
export type ContextArgs<TKind extends ToolKind> = TKind extends 'read'
  ? [context?: CallContext]
  : [context: KeyedCallContext];

/** Who may read a job's status: the tenant and the user the job ran for. */
export type JobLookup = Pick<CallContext, 'tenant' | 'user'>;

interface ToolBase<TCallInput, TValue, TKind extends ToolKind, TArgs extends unknown[] = ContextArgs<TKind>> {
  readonly name: string;
  readonly kind: TKind;
  readonly description: string | undefined;
  readonly title: string | undefined;
  readonly destructive: boolean;
  /** The Standard Schema validator, for adapters that publish a JSON schema. */
  readonly input: StandardSchemaV1 | undefined;
  /**
   * The tool's `approval` option ('required' or a rule of the input), undefined without one: adapters read it to
   * hand a call to their SDK's own approval flow (the AI SDK's `needsApproval`, the Agents SDK's interruptions).
   */
  readonly approval: ApprovalRule | undefined;
  call(input: TCallInput, ...context: TArgs): Promise<TValue>;
  invoke(input: TCallInput, ...context: TArgs): Promise<InvokeReport<TValue>>;
}

/** A job tool: `call` starts (or reports) the job, `getJob` reads its status by id. */
export interface JobTool<TCallInput, TValue, TArgs extends unknown[] = ContextArgs<'job'>>
  extends ToolBase<TCallInput, TValue, 'job', TArgs> {
  /**
   * The current status of a job by id, for the tenant and user it ran for. Undefined when there is no such job
   * for them, or when it has not started (awaiting a person's approval, or declined).
   */
  getJob(jobId: string, context?: JobLookup): Promise<TValue | undefined>;
}

/** A tool of any kind, as adapters hold it: the key is checked at run time; `kind === 'job'` narrows to jobs. */
type AnyTool<TCallInput, TValue> =
  | ToolBase<TCallInput, TValue, 'read' | 'mutation', [context?: CallContext]>
  | JobTool<TCallInput, TValue, [context?: CallContext]>;

/**
 * A tool wrapped by the ledger. `call` returns the value; `invoke` also says how it was obtained. The kind decides
 * the shape: mutations and jobs need a key, and only jobs have `getJob`.
 */
export type LedgerTool<TCallInput, TValue, TKind extends ToolKind = ToolKind> = ToolKind extends TKind
  ? AnyTool<TCallInput, TValue>
  : TKind extends 'job'
    ? JobTool<TCallInput, TValue>
    : ToolBase<TCallInput, TValue, TKind>;

/** Turns a check that throws into the refusal it stands for. */
function refuseIf(reason: RejectedReason, check: () => void): Refusal | undefined {
  try {
    check();
    return undefined;
  } catch (error) {
    return rejected(reason, error);
  }
}

/** The checks of the call context, before anything else runs. */
function admitContext(tool: ResolvedToolConfig, context: CallContext): Refusal | undefined {
  const { name, kind } = tool;
  return (
    refuseIf('context_invalid', () => {
      assertStorableId(context.tenant ?? 'default', 'tenant', name);
      if (context.user !== undefined) assertStorableId(context.user, 'user', name);
    }) ??
    (kind === 'read'
      ? undefined
      : context.key === undefined || context.key === null
        ? rejected('key_required', keyRequired(name))
        : refuseIf('key_invalid', () => assertValidKey(context.key, name)))
  );
}

function inputHash(
  name: string,
  validated: unknown,
  volatile: OmitTree | undefined,
): { readonly hash: string } | Refusal {
  try {
    return { hash: parameterHash(validated, volatile) };
  } catch (error) {
    if (!(error instanceof NotJsonError)) throw error;
    return rejected('input_invalid', inputNotJson(name, error));
  }
}

/** The call's decision for telemetry, one literal of one shape (spreading the facts into it cost 5 µs a call). */
function decisionOf(facts: CallFacts, end: CallEnd): Decision {
  const refusal = isRefusal(end) ? end : undefined;
  return {
    outcome: end.outcome,
    attempt: facts.attempt,
    waitedMs: facts.waitedMs,
    executionSeconds: facts.executionSeconds,
    jobId: facts.jobId,
    original: facts.original,
    toolError: facts.toolError,
    conflictReason: refusal?.conflictReason,
    rejectedReason: refusal?.rejectedReason,
    error: refusal?.error,
    result: refusal ? undefined : (end as Answer).value,
  };
}

export function createTool<TSchema extends StandardSchemaV1 | undefined, TOutput>(
  runtime: LedgerRuntime,
  definition: ToolOptions<TSchema, TOutput>,
): LedgerTool<CallInputOf<TSchema>, unknown> {
  const tool = resolveToolConfig(
    definition as ToolOptions<StandardSchemaV1 | undefined, unknown>,
    runtime.config,
  );
  const { name, kind, handler } = tool;
  const { notifier, observer } = runtime;
  const observed = observer !== noopObserver;
  const execute = createExecutor({ runtime, ...tool });
  const volatile = omitTreeOf(tool.volatileFields);
  // The tool's wait bounds, built once: a literal that spreads after a field is built on a slow path every call.
  const runWait = { budgetMs: tool.waitMs, ...RUN_BACKOFF };
  const claimLoop =
    kind === 'read'
      ? undefined
      : createClaimLoop(kind, { name, runtime, execute, approval: approvalSettings(runtime, tool) });
  if (kind !== 'read') runtime.announceUnsaved(name);

  /**
   * Starts a call: a refusal at once, or the promise of how it ends. Not an async function, and no await without a
   * schema: each async frame and await is a promise and a turn of the microtask queue on every call.
   */
  const start = (
    input: unknown,
    context: CallContext,
    scope: CallScope,
    facts: CallFacts,
  ): CallEnd | Promise<CallEnd> => {
    const refusal = admitContext(tool, context);
    if (refusal) return refusal;
    if (!tool.input) return proceed(input, context, scope, facts);
    return validateInput(tool.input, input, name).then(
      (validated) => proceed(validated, context, scope, facts),
      (error: unknown) => rejected('input_invalid', error),
    );
  };

  /** A call whose context and input were admitted: the read, or the claim loop with the input's hash. */
  const proceed = (
    validated: unknown,
    context: CallContext,
    scope: CallScope,
    facts: CallFacts,
  ): CallEnd | Promise<CallEnd> => {
    const tenant = context.tenant ?? 'default';
    if (!claimLoop) return runRead(handler, name, validated, context, tenant, scope, facts);

    const hashed = inputHash(name, validated, volatile);
    if ('error' in hashed) return hashed;
    const paramsHash = hashed.hash;
    scope.setParamsHash(paramsHash);
    return claimLoop({
      request: claimRequestOf(runtime, tool, context, tenant, paramsHash, scope.spanRef),
      input: validated,
      context,
      scope,
      facts,
      waiter: new Waiter(notifier, runWait, context.signal),
    });
  };

  /** Tells telemetry how the call ended, and hands the end on. */
  const reported = (scope: CallScope, facts: CallFacts, end: CallEnd): CallEnd => {
    if (scope !== NOOP_SCOPE) {
      try {
        scope.end(decisionOf(facts, end));
      } catch {
        // Telemetry never changes a call's outcome.
      }
    }
    return end;
  };

  /**
   * Decides the call and tells telemetry how it ended; never rejects (a refusal or failure is the end). Anything
   * thrown rather than decided (the handler, the database) is a failure. One `then`, not an async frame and its
   * await: each is a promise and a turn of the microtask queue on every call.
   */
  const settle = (input: unknown, ctx: CallContext, scope: CallScope, facts: CallFacts): Promise<CallEnd> => {
    let started: CallEnd | Promise<CallEnd>;
    try {
      started = start(input, ctx, scope, facts);
    } catch (error) {
      return Promise.resolve(reported(scope, facts, { outcome: 'failed', error }));
    }
    return Promise.resolve(started).then(
      (end) => reported(scope, facts, end),
      (error: unknown) => reported(scope, facts, { outcome: 'failed', error }),
    );
  };

  /** Runs one call, tracked so `close()` waits for it, inside its telemetry scope when telemetry is on. */
  const run = (input: unknown, ctx: CallContext, facts: CallFacts): Promise<CallEnd> => {
    runtime.assertOpen(name);
    const scope = observed
      ? observer.startCall({
          tool: name,
          kind,
          tenant: typeof ctx.tenant === 'string' ? ctx.tenant : 'default',
          key: typeof ctx.key === 'string' ? ctx.key : undefined,
          user: typeof ctx.user === 'string' ? ctx.user : undefined,
          toolCallId: typeof ctx.toolCallId === 'string' ? ctx.toolCallId : undefined,
          description: tool.description,
          input,
        })
      : NOOP_SCOPE;
    // With telemetry off, or nobody to report to (the observer answers NOOP_SCOPE when no SDK is registered),
    // nothing reads the call's end facts or its context, so none are built.
    if (scope === NOOP_SCOPE) return runtime.track(settle(input, ctx, NOOP_SCOPE, facts));
    return runtime.track(scope.run(() => settle(input, ctx, scope, facts)));
  };

  const invoke = async (input: unknown, context: CallContext = {}): Promise<InvokeReport<unknown>> => {
    const ctx = context ?? {};
    const facts: CallFacts = {};
    const end = await run(input, ctx, facts);
    if (isRefusal(end)) throw end.error;
    return reportOf(tool, ctx, facts, end);
  };

  // The value alone: no report to build.
  const call = (input: unknown, context?: CallContext): Promise<unknown> => {
    try {
      return run(input, context ?? {}, {}).then(valueOrThrow);
    } catch (error) {
      // A closed ledger refuses the call as a rejection, as an async function would.
      return Promise.reject(error);
    }
  };

  return Object.freeze({
    name,
    kind,
    description: tool.description,
    title: tool.title,
    destructive: tool.destructive,
    input: tool.input,
    approval: tool.approval,
    invoke,
    call,
    ...(kind === 'job' ? { getJob: jobLookup(runtime, name) } : {}),
  }) as unknown as LedgerTool<CallInputOf<TSchema>, unknown>;
}

/** A call's value, or its refusal or failure thrown. */
function valueOrThrow(end: CallEnd): unknown {
  if (isRefusal(end)) throw end.error;
  return end.value;
}

/** What a call's claim sends: the key's scope, the input's hash, a fresh lease owner (or a lost claim's) and its span. */
function claimRequestOf(
  runtime: LedgerRuntime,
  tool: ResolvedToolConfig,
  context: CallContext,
  tenant: string,
  paramsHash: string,
  span: SpanRef | undefined,
): ClaimRequest {
  const { name, kind } = tool;
  return {
    tenant,
    tool: name,
    key: context.key as string,
    user: context.user,
    paramsHash,
    leaseOwner: runtime.lostClaims.takeFor(tenant, name, context.key as string) ?? newLeaseOwner(),
    leaseSeconds: tool.leaseSeconds,
    ttlSeconds: tool.ttlSeconds,
    traceId: span?.traceId,
    spanId: span?.spanId,
    jobId: kind === 'job' ? `job_${randomUUID()}` : undefined,
    allowLeaseTakeover: tool.allowLeaseTakeover,
    wouldWait: kind === 'mutation' && tool.waitMs > 0,
  };
}

/** The report `invoke` answers for a call that returned a value. */
function reportOf(
  tool: ResolvedToolConfig,
  ctx: CallContext,
  facts: CallFacts,
  end: Answer,
): InvokeReport<unknown> {
  const { name, kind } = tool;
  const row = end.row;
  return {
    outcome: end.outcome,
    value: end.value,
    tool: name,
    kind,
    tenant: typeof ctx.tenant === 'string' ? ctx.tenant : 'default',
    key: ctx.key,
    paramsHash: end.paramsHash,
    attempt: row?.attempt ?? (kind === 'read' ? 0 : 1),
    waitedMs: facts.waitedMs ?? 0,
    completedAt: end.completedAt,
    jobId: row?.job_id ?? undefined,
    originalSpan: end.outcome !== 'executed' && row ? spanOf(row) : undefined,
  };
}

/** A job tool's `getJob`: the status of a job by id, for the tenant and user it ran for. */
function jobLookup(runtime: LedgerRuntime, name: string) {
  return async (jobId: string, lookup: JobLookup = {}): Promise<JobStatus | undefined> => {
    runtime.assertOpen(name);
    const tenant = lookup.tenant ?? 'default';
    assertStorableId(tenant, 'tenant', name);
    if (lookup.user !== undefined) assertStorableId(lookup.user, 'user', name);
    if (typeof jobId !== 'string' || jobId.length === 0 || jobId.length > 255) return undefined;
    const row = await runtime.store.findJob(tenant, name, jobId);
    // Another user's job is reported as absent, like a retry with their key: nothing of it is revealed. So is a job
    // that has not started (awaiting a person's approval, or declined).
    return row && row.user_id === (lookup.user ?? null) && jobStarted(row) ? jobStatusOf(row) : undefined;
  };
}
