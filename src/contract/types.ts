import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { ApprovalRule } from './approval.js';
import type { SuccessOutcome } from './outcomes.js';

/** How a tool touches the world. Only `mutation` and `job` go through the ledger. */
export type ToolKind = 'read' | 'mutation' | 'job';

export type { Outcome, RejectedReason } from './outcomes.js';

/**
 * The whole database surface tool-ledger needs. `pg.Pool`, `pg.Client`, `PGlite` and PGlite transactions all
 * satisfy it structurally, so callers bring their own driver version.
 */
export interface Queryable {
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<{ rows: R[] }>;
}

/** The context of a call to a mutation or job: the key is required. */
export interface KeyedCallContext extends CallContext {
  readonly key: string;
}

/** Who is calling and which intent the call carries. */
export interface CallContext {
  /** Idempotency key naming the intent (not the transport attempt). Required for mutations and jobs. */
  readonly key?: string | undefined;
  /**
   * Tenant that scopes the key.
   * @default 'default'
   */
  readonly tenant?: string | undefined;
  /** End user on whose behalf the call runs. A key reused by another user of the tenant is refused. */
  readonly user?: string | undefined;
  /** The model's tool call id, recorded in telemetry. */
  readonly toolCallId?: string | undefined;
  /** Aborts waiting for a parallel duplicate (not a running handler). */
  readonly signal?: AbortSignal | undefined;
}

/** What a handler receives besides its validated input. */
export interface HandlerContext {
  readonly tool: string;
  readonly tenant: string;
  readonly key: string | undefined;
  readonly user: string | undefined;
  readonly toolCallId: string | undefined;
  /** 1 for the first execution of a key, higher after a retryable failure or a lease takeover. */
  readonly attempt: number;
  /** For jobs: the job id returned to callers. */
  readonly jobId: string | undefined;
  /**
   * Aborted when this execution lost its lease (another process took over) or the ledger is closing.
   * Long handlers should pass it to their I/O.
   */
  readonly signal: AbortSignal;
  /**
   * With `transactional: true`: the client of the transaction that holds the claim. Writes made through it
   * commit together with the ledger completion, or not at all.
   */
  readonly db: Queryable | undefined;
  /** Extends the lease now. Leases are also renewed automatically, `leaseSeconds / 3` after the last renewal (at most `leaseSeconds / 2`). */
  renewLease(): Promise<void>;
  /**
   * Runs one recorded step of this execution: an effect outside the database, such as a charge or an e-mail.
   * `fn`'s JSON result is saved in the ledger before `step` returns; a later attempt of the same run (a takeover
   * after a crash or a lost lease) gets the saved result back without calling `fn` again. A step that started
   * and never recorded a result has an unknown outcome, which `options.onUnknown` settles (default `'fail'`).
   * Step names are unique within a tool's handler; the same name in one run returns the same recorded step.
   */
  step<T>(
    name: string,
    fn: (step: StepContext) => T | Promise<T>,
    options?: StepOptions<T>,
  ): Promise<JsonForm<T>>;
}

/** What a step's function (and its `onUnknown` lookup) receives. */
export interface StepContext {
  /** The step's name, as passed to `ctx.step`. */
  readonly name: string;
  /**
   * A provider idempotency key for this step: the same on every attempt of this run, and different for every
   * tenant, tool, idempotency key and step name (`tl_` and 43 base64url characters; no personal data). Pass it to
   * a provider that dedupes by key, such as Stripe's `Idempotency-Key`.
   */
  readonly key: string;
  /** The attempt of the run this step runs (or is looked up) in. */
  readonly attempt: number;
  /** The handler's signal: aborted when the lease is lost or the ledger closes. */
  readonly signal: AbortSignal;
}

/**
 * What an attempt does when an earlier attempt's effect has an unknown outcome (it started and never recorded
 * a result: a crash, a lost lease, a dead network, or an `OutcomeUnknownError`):
 * - `'rerun'`: run it again. Right when repeating is harmless, for example when it passes its key to a provider
 *   that dedupes.
 * - `'fail'`: end the call with a final `OUTCOME_UNKNOWN`; the row keeps status `unknown` until an operator
 *   settles it with `tool-ledger resolve`.
 * - a function that asks the provider: a value is taken as the result, `undefined` means the effect did not
 *   happen, so it runs.
 */
export type UnknownOutcomeRule<TContext, TValue> =
  | 'rerun'
  | 'fail'
  | ((context: TContext) => Promise<TValue | undefined> | TValue | undefined);

/** Options of one `ctx.step`. */
export interface StepOptions<T> {
  /**
   * What a later attempt does when this step started and never recorded a result.
   * @default 'fail'
   */
  readonly onUnknown?: UnknownOutcomeRule<StepContext, T>;
}

/** What a `transactional: true` handler receives: `db` is always the transaction's client. */
export interface TransactionalHandlerContext extends HandlerContext {
  readonly db: Queryable;
}

export type ToolHandler<TInput, TOutput, TContext extends HandlerContext = HandlerContext> = (
  input: TInput,
  ctx: TContext,
) => TOutput | Promise<TOutput>;

/** Options of one tool, passed to `ledger.tool()`. */
export interface ToolOptions<
  TSchema extends StandardSchemaV1 | undefined,
  TOutput,
  TContext extends HandlerContext = HandlerContext,
> {
  /** Tool name; scopes keys together with the tenant. */
  readonly name: string;
  readonly kind: ToolKind;
  readonly description?: string;
  readonly title?: string;
  /** Any Standard Schema validator (zod 4, valibot, arktype). Runs before the ledger is touched. */
  readonly input?: TSchema;
  readonly handler: ToolHandler<InputOf<TSchema>, TOutput, TContext>;
  /**
   * Dotted paths of input fields left out of the parameter hash, such as `requestedAt` or `meta.traceparent`.
   * @default []
   */
  readonly volatileFields?: readonly string[];
  /**
   * Run the handler inside the transaction that completes the ledger row, and give it that client as `ctx.db`.
   * @default false
   */
  readonly transactional?: boolean;
  /**
   * Whether the tool's effect is destructive (used for MCP annotations).
   * @default false
   */
  readonly destructive?: boolean;
  /**
   * Decides whether an error the handler threw is final (stored and replayed) rather than retryable.
   * A thrown `ToolFailure` decides for itself.
   * @default () => false
   */
  readonly isFinalError?: (error: unknown) => boolean;
  /**
   * For jobs: when a retry finds the job's lease lapsed (its worker died), start the work again under the same
   * job id. When false, the retry reports the job as `abandoned`.
   * @default true
   */
  readonly resumeAbandoned?: boolean;
  /** Per-tool override of the ledger's `leaseSeconds`. */
  readonly leaseSeconds?: number;
  /** Per-tool override of the ledger's `waitSeconds`. */
  readonly waitSeconds?: number;
  /** Per-tool override of the ledger's `ttlSeconds`. */
  readonly ttlSeconds?: number;
  /**
   * What a takeover does when the previous attempt held the key and never recorded an outcome (it crashed, or
   * lost its lease, mid-handler), and that attempt recorded no steps; steps settle their own unknowns. A lookup
   * receives the handler's context and the validated input. `'rerun'` keeps the behaviour of earlier versions.
   * @default 'rerun'
   */
  readonly onUnknown?: UnknownOutcomeRule<UnknownRunContext, unknown>;
  /**
   * Mutations and jobs: whether a call needs a person's approval before its handler runs (docs/ledger.md,
   * "Approvals"). The first call on a key that needs one runs nothing, saves the call awaiting a decision and
   * answers `APPROVAL_REQUIRED`; `ledger.approve` or `ledger.decline` (or `tool-ledger approve|decline`) decides,
   * and the next call with the same key and arguments runs the handler once (a job: starts it, and answers its
   * running status), or answers `APPROVAL_DECLINED`.
   * @default undefined (no approval: the tool's calls are exactly as without the option)
   */
  readonly approval?: ApprovalRule<InputOf<TSchema>>;
  /** Per-tool override of the ledger's `approvalTtlSeconds`. */
  readonly approvalTtlSeconds?: number;
  /** Per-tool override of the ledger's `approvalWaitSeconds`. */
  readonly approvalWaitSeconds?: number;
}

/** What a tool's `onUnknown` lookup receives: who called, and the validated input of the run. */
export interface UnknownRunContext {
  readonly tool: string;
  readonly tenant: string;
  readonly key: string;
  readonly user: string | undefined;
  /** The attempt that is deciding (the interrupted one was `attempt - 1`). */
  readonly attempt: number;
  readonly input: unknown;
}

export type InputOf<TSchema> = TSchema extends StandardSchemaV1
  ? StandardSchemaV1.InferOutput<TSchema>
  : unknown;
export type CallInputOf<TSchema> = TSchema extends StandardSchemaV1
  ? StandardSchemaV1.InferInput<TSchema>
  : unknown;

/**
 * The JSON form of a value, as the ledger stores and returns it (`JSON.parse(JSON.stringify(value))`): a `Date`
 * becomes a string, `toJSON` is applied, undefined properties go. What `call()` of a mutation or job returns.
 */
export type JsonForm<T> = T extends { toJSON(...args: never[]): infer R }
  ? JsonForm<R>
  : T extends string | number | boolean | null
    ? T
    : T extends undefined | ((...args: never[]) => unknown) | symbol | bigint
      ? never
      : T extends readonly (infer U)[]
        ? (JsonForm<U> extends never ? null : JsonForm<U>)[]
        : T extends object
          ? { -readonly [K in keyof T as JsonForm<T[K]> extends never ? never : K]: JsonForm<T[K]> }
          : unknown;

export type JobState = 'running' | 'succeeded' | 'failed' | 'abandoned' | 'unknown';

/** What a job call returns: at once on the first call, and the current state on every retry. */
export interface JobStatus<TResult = unknown> {
  readonly jobId: string;
  readonly status: JobState;
  readonly attempt: number;
  /** The final result once `status` is `succeeded`. */
  readonly result?: TResult;
  /** The stored failure once `status` is `failed`. */
  readonly error?: StoredError;
}

/** A failure as the ledger stores it: JSON, replayable, scrubbed of stacks. */
export interface StoredError {
  readonly name: string;
  readonly code: string;
  readonly message: string;
  readonly final: boolean;
  readonly reason?: string;
  readonly details?: unknown;
}

/** What `invoke` returns: the value plus how it was obtained. */
export interface InvokeReport<TValue> {
  readonly outcome: SuccessOutcome;
  readonly value: TValue;
  readonly tool: string;
  readonly kind: ToolKind;
  readonly tenant: string;
  readonly key: string | undefined;
  /** SHA-256 of the canonical input; undefined for read tools. */
  readonly paramsHash: string | undefined;
  /** Attempt number of the execution whose value this is (0 for read tools). */
  readonly attempt: number;
  /** Milliseconds this call waited for a parallel duplicate to finish. */
  readonly waitedMs: number;
  /** When the execution that produced `value` completed. */
  readonly completedAt: Date | undefined;
  readonly jobId: string | undefined;
  /** Trace and span of the original execution, when it was traced. */
  readonly originalSpan: { readonly traceId: string; readonly spanId: string } | undefined;
}
