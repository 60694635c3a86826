import { jsonText } from '../contract/canonical-json.js';
import { ToolFailure, ToolLedgerError } from '../contract/errors.js';
import { NotJsonError } from '../contract/json.js';
import type { CallScope } from '../contract/observer.js';
import type { CallContext, HandlerContext, Queryable } from '../contract/types.js';
import type { ClaimRow } from '../ledger/run-row.js';
import type { Completion } from '../ledger/store.js';
import type { CallFacts } from './facts.js';
import { toStoredError } from './failures.js';
import { LostClaims } from './lost-claims.js';
import type { LedgerRuntime } from './runtime.js';

export interface ExecutorSettings {
  readonly runtime: LedgerRuntime;
  readonly name: string;
  readonly handler: (input: unknown, ctx: HandlerContext) => unknown;
  readonly transactional: boolean;
  readonly isFinalError: (error: unknown) => boolean;
  readonly leaseSeconds: number;
  readonly ttlSeconds: number;
}

export type Execute = (
  row: ClaimRow,
  input: unknown,
  context: CallContext,
  tenant: string,
  scope: CallScope,
  facts: CallFacts,
) => Promise<{ value: unknown; completedAt: Date }>;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Runs the handler for a claim a call won, under a renewed lease, and records how it ended: the fenced completion,
 * or the failure (final or retryable). In transactional mode the handler's writes commit with the completion.
 */
export function createExecutor(settings: ExecutorSettings): Execute {
  const { runtime, name, handler, transactional, isFinalError, leaseSeconds, ttlSeconds } = settings;
  const { store } = runtime;

  const resultJson = (value: unknown): { value: unknown; text: string } => {
    // One walk to text, then the native parser for the copy the caller gets (what a replay would return).
    const text = jsonText(value, true);
    return { value: JSON.parse(text), text };
  };

  const notJson = (error: NotJsonError, alreadyRan: boolean) =>
    new ToolLedgerError(
      'RESULT_INVALID',
      `Tool "${name}" returned a value that cannot be stored as JSON (${error.message}). ` +
        (alreadyRan
          ? 'The handler ran, so the key is spent to avoid repeating its side effect: return JSON-safe values and use a new key.'
          : 'Its transaction was rolled back; return JSON-safe values and retry.'),
      { cause: error, retryable: !alreadyRan },
    );

  /** Writes the completion, retrying briefly: the handler already ran, so losing its result is the costly path. */
  const complete = (completion: Completion, scope: CallScope): Promise<Date | undefined> =>
    // The first attempt without an async frame of its own: the retries are the rare path.
    store.complete(completion, scope.recordLedgerOperation).catch(async () => {
      for (let attempt = 2; ; attempt++) {
        await sleep(100 * (attempt - 1));
        try {
          return await store.complete(completion, scope.recordLedgerOperation);
        } catch (error) {
          if (attempt >= 3) throw error;
        }
      }
    });

  /**
   * Keeps the outcome of a completion that failed, after the caller has been told, and saves it in the background.
   * Until it lands, the row stays `in_progress` under this attempt, so a retry with the same key waits for it
   * instead of running the handler again; the fence still refuses it if another caller took the key over. False
   * when the limits on kept outcomes leave no room.
   */
  const saveLater = (tenant: string, key: string, completion: Completion): boolean =>
    runtime.saves.offer(
      name,
      LostClaims.key(tenant, name, key),
      completion,
      (work) => void runtime.track(work),
    );

  const resultNotSaved = (error: unknown) => {
    // The store's own message says nothing was decided, which stopped being true when the handler ran.
    const driverError = error instanceof ToolLedgerError && error.cause !== undefined ? error.cause : error;
    const detail = driverError instanceof Error ? driverError.message : String(driverError);
    return new ToolLedgerError(
      'LEDGER_UNAVAILABLE',
      `Tool "${name}" ran, but the database failed while saving its result (${detail}). This process keeps the result and saves it as soon as the database answers. Retry with the same key to get it (IN_PROGRESS until then); do not use a new key, or the action may run twice.`,
      { cause: error, retryable: true },
    );
  };

  const resultNotKept = (error: unknown) => {
    const { maxUnsavedResults, maxUnsavedResultBytes } = runtime.config;
    return new ToolLedgerError(
      'LEDGER_UNAVAILABLE',
      `Tool "${name}" ran, but the database failed while saving its result, and this process already keeps ${runtime.saves.count} unsaved results (${runtime.saves.bytes} bytes; maxUnsavedResults=${maxUnsavedResults}, maxUnsavedResultBytes=${maxUnsavedResultBytes}), so this one was not kept. The action happened; a retry with the same key gets IN_PROGRESS until the lease lapses and then runs the tool again. Check the database before retrying, and raise the limits if outages outlast them.`,
      { cause: error, retryable: false },
    );
  };

  const leaseLost = () =>
    new ToolLedgerError(
      'LEASE_LOST',
      `Tool "${name}" finished after its lease lapsed and another caller took over the key, so this result was discarded. Retry with the same key to get the current execution's result; raise leaseSeconds for long handlers.`,
    );

  // One literal of one shape: spreading a shared base into each outcome's object cost a first execution 6 µs.
  const completionOf = (
    row: ClaimRow,
    status: Completion['status'],
    final: boolean,
    resultJson: string | null,
    error: Completion['error'],
  ): Completion => ({
    id: row.id,
    attempt: row.attempt,
    leaseOwner: row.lease_owner!,
    status,
    final,
    resultJson,
    error,
    ttlSeconds,
  });

  const recordFailureOf = async (
    row: ClaimRow,
    tenant: string,
    key: string,
    scope: CallScope,
    error: unknown,
    final: boolean,
  ) => {
    const completion = completionOf(row, 'failed', final, null, toStoredError(error, final));
    try {
      await complete(completion, scope);
    } catch {
      // The caller gets the handler's own error either way; saving it later keeps a final failure from being
      // retried by the next call with this key.
      saveLater(tenant, key, completion);
    }
  };

  const execute: Execute = async (row, input, context, tenant, scope, facts) => {
    const lease = runtime.leases.hold(
      store,
      { id: row.id, attempt: row.attempt, owner: row.lease_owner! },
      leaseSeconds,
    );
    const handlerContext = (db: Queryable | undefined): HandlerContext => ({
      tool: name,
      tenant,
      key: context.key,
      user: context.user,
      toolCallId: context.toolCallId,
      attempt: row.attempt,
      jobId: row.job_id ?? undefined,
      // A getter, so the signal is made only for a handler that reads it (own and enumerable, as before).
      get signal() {
        return lease.signal;
      },
      db,
      renewLease: lease.renew,
    });
    const started = performance.now();
    let handlerFailed = false;
    let handlerError: unknown;
    const runHandler = async (db: Queryable | undefined) => {
      try {
        return await handler(input, handlerContext(db));
      } catch (error) {
        handlerFailed = true;
        handlerError = error;
        throw error;
      } finally {
        facts.executionSeconds = (performance.now() - started) / 1000;
      }
    };
    const recordFailure = (error: unknown, final: boolean) =>
      recordFailureOf(row, tenant, context.key as string, scope, error, final);

    scope.handlerStarted();
    try {
      if (transactional) {
        try {
          return await store.driver.transaction(async (tx) => {
            const result = resultJson(await runHandler(tx));
            const completedAt = await store.complete(
              completionOf(row, 'succeeded', false, result.text, null),
              scope.recordLedgerOperation,
              tx,
            );
            if (!completedAt) throw leaseLost();
            return { value: result.value, completedAt };
          });
        } catch (error) {
          if (error instanceof NotJsonError) {
            await recordFailure(notJson(error, false), false);
            throw notJson(error, false);
          }
          // The driver replaces the handler's error when the connection died under it: not the handler's failure.
          if (handlerFailed && error === handlerError) {
            facts.toolError = true;
            await recordFailure(error, error instanceof ToolFailure ? error.final : isFinalError(error));
          } else if (!(error instanceof ToolLedgerError && error.code === 'LEASE_LOST')) {
            await recordFailure(error, false);
          }
          throw error;
        }
      }

      let value: unknown;
      // The handler called here rather than through runHandler: one async frame less on every call.
      try {
        value = await handler(input, handlerContext(undefined));
      } catch (error) {
        facts.executionSeconds = (performance.now() - started) / 1000;
        facts.toolError = true;
        await recordFailure(error, error instanceof ToolFailure ? error.final : isFinalError(error));
        throw error;
      }
      facts.executionSeconds = (performance.now() - started) / 1000;
      let result: { value: unknown; text: string };
      try {
        result = resultJson(value);
      } catch (error) {
        const wrapped = error instanceof NotJsonError ? notJson(error, true) : error;
        await recordFailure(wrapped, true);
        throw wrapped;
      }
      const completion = completionOf(row, 'succeeded', false, result.text, null);
      let completedAt: Date | undefined;
      try {
        completedAt = await complete(completion, scope);
      } catch (error) {
        if (!saveLater(tenant, context.key as string, completion)) throw resultNotKept(error);
        throw resultNotSaved(error);
      }
      if (!completedAt) throw leaseLost();
      return { value: result.value, completedAt };
    } finally {
      lease.release();
      scope.handlerFinished();
    }
  };
  return execute;
}
