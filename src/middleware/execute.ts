import { jsonText } from '../contract/canonical-json.js';
import { OutcomeUnknownError, ToolFailure, ToolLedgerError } from '../contract/errors.js';
import { NotJsonError } from '../contract/json.js';
import type { CallScope } from '../contract/observer.js';
import type {
  CallContext,
  HandlerContext,
  Queryable,
  StoredError,
  UnknownOutcomeRule,
  UnknownRunContext,
} from '../contract/types.js';
import { classifyDriverError } from '../ledger/errors.js';
import type { ClaimRow } from '../ledger/run-row.js';
import { type Completion, fenceOf } from '../ledger/store.js';
import { ENDING_RULES, type EndingKind } from './endings.js';
import type { CallFacts } from './facts.js';
import { toStoredError } from './failures.js';
import { LostClaims } from './lost-claims.js';
import { retryWrite } from './retry-write.js';
import type { LedgerRuntime } from './runtime.js';
import { DECIDED_UNKNOWN, StepRunner } from './steps.js';

export interface ExecutorSettings {
  readonly runtime: LedgerRuntime;
  readonly name: string;
  readonly handler: (input: unknown, ctx: HandlerContext) => unknown;
  readonly transactional: boolean;
  readonly isFinalError: (error: unknown) => boolean;
  readonly onUnknown: UnknownOutcomeRule<UnknownRunContext, unknown>;
  readonly leaseSeconds: number;
  readonly ttlSeconds: number;
}

/** How an execution ended, as the caller sees it. */
export type Executed =
  | {
      readonly outcome: 'executed' | 'replayed';
      readonly value: unknown;
      readonly completedAt: Date;
    }
  | { readonly outcome: 'failed' | 'unknown'; readonly error: unknown };

export type Execute = (
  row: ClaimRow,
  input: unknown,
  context: CallContext,
  tenant: string,
  scope: CallScope,
  facts: CallFacts,
) => Promise<Executed>;

/** An ending as the attempt classified it: the kind decides everything else (see `ENDING_RULES`). */
interface Ending {
  readonly kind: EndingKind;
  /** The result's JSON text, for endings that save or return a value. */
  readonly text?: string;
  /** For `committed`: the completion time the transaction returned. */
  readonly completedAt?: Date;
  /** The error the caller gets, for endings that answer with one. */
  readonly error?: unknown;
  /** For `handler_threw`: whether the handler's error is final. */
  readonly final?: boolean;
}

/** One attempt's facts, as the runners of the handler need them. */
interface Attempt {
  readonly row: ClaimRow;
  readonly input: unknown;
  readonly tenant: string;
  readonly unknown: UnknownRunContext;
  readonly scope: CallScope;
  readonly facts: CallFacts;
  readonly started: number;
}

/** The handler's own error, carried through the driver's transaction so it is told apart by type, not identity. */
class HandlerThrew {
  constructor(readonly error: unknown) {}
}

/**
 * Runs the handler for a claim a call won, under a renewed lease, and ends it as `ENDING_RULES` says: the fenced
 * completion, a failure (final or retryable) or an unknown outcome. In transactional mode the handler's writes
 * commit with the completion. A result this process already holds for the key is saved, never produced again.
 */
export function createExecutor(settings: ExecutorSettings): Execute {
  const { runtime, name, handler, transactional, isFinalError, onUnknown, leaseSeconds, ttlSeconds } =
    settings;
  const { store } = runtime;

  /** Writes the completion, retrying briefly: the handler already ran, so losing its result is the costly path. */
  const complete = (completion: Completion, scope: CallScope): Promise<Date | undefined> =>
    // The first attempt without an async frame of its own: the retries are the rare path.
    store
      .complete(completion, scope.recordLedgerOperation)
      .catch(() => retryWrite(() => store.complete(completion, scope.recordLedgerOperation), 1));

  const notJson = (error: NotJsonError, alreadyRan: boolean) =>
    new ToolLedgerError(
      'RESULT_INVALID',
      `Tool "${name}" returned a value that cannot be stored as JSON (${error.message}). ` +
        (alreadyRan
          ? 'The handler ran, so the key is spent to avoid repeating its side effect: return JSON-safe values and use a new key.'
          : 'Its transaction was rolled back; return JSON-safe values and retry.'),
      { cause: error, retryable: !alreadyRan },
    );

  const resultNotSaved = (error: unknown) => {
    // The store's own message says nothing was decided, which stopped being true when the handler ran.
    const driverError = error instanceof ToolLedgerError && error.cause !== undefined ? error.cause : error;
    const detail = driverError instanceof Error ? driverError.message : String(driverError);
    // A failure that no wait mends (a privilege, a statement Citus refuses) says what to fix first.
    const { fix } = classifyDriverError(driverError);
    return new ToolLedgerError(
      'LEDGER_UNAVAILABLE',
      `Tool "${name}" ran, but the database failed while saving its result (${detail}).${fix ? ` ${fix}.` : ''} This process keeps the result and saves it as soon as the database answers. Retry with the same key to get it; do not use a new key, or the action may run twice.`,
      { cause: error, retryable: true },
    );
  };

  const resultNotKept = (error: unknown) => {
    const { maxUnsavedResults, maxUnsavedResultBytes } = runtime.config;
    return new ToolLedgerError(
      'LEDGER_UNAVAILABLE',
      `Tool "${name}" ran, but the database failed while saving its result, and this process already keeps ${runtime.saves.count} unsaved ${runtime.saves.count === 1 ? 'result' : 'results'} (${runtime.saves.bytes} bytes; maxUnsavedResults=${maxUnsavedResults}, maxUnsavedResultBytes=${maxUnsavedResultBytes}), so this one was not kept. The action happened; a retry with the same key gets IN_PROGRESS until the lease lapses and then follows the tool's onUnknown rule (with the default 'rerun', it runs the tool again; 'fail' marks it unknown). Check the database before retrying, and raise the limits if outages outlast them.`,
      { cause: error, retryable: false },
    );
  };

  const leaseLost = () =>
    new ToolLedgerError(
      'LEASE_LOST',
      `Tool "${name}" finished after its lease lapsed and another caller took over the key, so this result was discarded. Retry with the same key to get the current execution's result; raise leaseSeconds for long handlers.`,
    );

  const interrupted = (tenant: string, attempt: number) =>
    new OutcomeUnknownError(
      `Tool "${name}": attempt ${attempt - 1} held this key and never recorded an outcome (it crashed or lost its lease mid-handler), so its effect may or may not have happened, and the tool's onUnknown rule is 'fail'. The run is marked unknown and the handler is not run again. Check the effect, then settle the run: tool-ledger resolve --tenant ${tenant} --tool ${name} --key <key> (--result JSON | --failed MESSAGE | --rerun).`,
    );

  // One literal of one shape: spreading a shared base into each outcome's object cost a first execution 6 µs.
  const completionOf = (
    row: ClaimRow,
    status: Completion['status'],
    final: boolean,
    resultJson: string | null,
    error: StoredError | null,
  ): Completion => ({
    ...fenceOf(row),
    status,
    final,
    resultJson,
    error,
    ttlSeconds,
  });

  /** The completion an ending saves, per its rule; undefined when it saves nothing. */
  const completionFor = (row: ClaimRow, ending: Ending): Completion | undefined => {
    const rule = ENDING_RULES[ending.kind];
    switch (rule.save) {
      case 'result':
        return completionOf(row, 'succeeded', false, ending.text!, null);
      case 'failure': {
        const final = rule.final === 'verdict' ? ending.final === true : rule.final;
        return completionOf(row, 'failed', final, null, toStoredError(ending.error, final));
      }
      case 'unknown':
        return completionOf(row, 'unknown', false, null, toStoredError(ending.error, true));
      case 'nothing':
        return undefined;
    }
  };

  /** Does what the ending's rule says: saves (or keeps) its completion, then answers or throws. */
  const finish = async (
    row: ClaimRow,
    ending: Ending,
    callKey: string,
    scope: CallScope,
    facts: CallFacts,
  ): Promise<Executed> => {
    const rule = ENDING_RULES[ending.kind];
    if (rule.toolError) facts.toolError = true;
    const completion = completionFor(row, ending);
    let completedAt = ending.completedAt;
    if (completion) {
      // From here until it lands, this process holds the outcome: a retry from here saves it, never reruns it.
      runtime.saves.saving(callKey, completion);
      try {
        completedAt = await complete(completion, scope);
        // Refused: another caller took the key over, unless a retry from this process saved it for us.
        completedAt ??= runtime.saves.savedForThem(completion);
        runtime.saves.landed(callKey, completion);
      } catch (error) {
        runtime.saves.landed(callKey, completion);
        completedAt = runtime.saves.savedForThem(completion);
        if (!completedAt) {
          const kept = runtime.saves.offer(name, callKey, completion, (work) => void runtime.track(work));
          if (rule.ifSaveFails === 'keep_and_report') {
            return { outcome: 'failed', error: kept ? resultNotSaved(error) : resultNotKept(error) };
          }
        }
      }
      if (!completedAt && rule.answer === 'value') return { outcome: 'failed', error: leaseLost() };
    }
    if (rule.answer === 'the_error') return { outcome: rule.outcome, error: ending.error };
    return { outcome: rule.outcome, value: JSON.parse(ending.text!), completedAt: completedAt! };
  };

  /** The ending of a handler's throw, as its type says. */
  const thrown = async (
    error: unknown,
    tenant: string,
    ctx: UnknownRunContext,
    scope: CallScope,
  ): Promise<Ending> => {
    if (DECIDED_UNKNOWN.has(error as object)) return { kind: 'outcome_unknown', error };
    if (error instanceof ToolLedgerError && error.code === 'LEASE_LOST') return { kind: 'lease_lost', error };
    if (error instanceof OutcomeUnknownError) {
      // The handler says its effect may have happened: the tool's rule decides now, as for a crashed attempt.
      const settled = await settleUnknown(ctx, tenant, scope, error);
      if (settled) return settled;
      return {
        kind: 'handler_threw',
        final: false,
        error: new ToolFailure(
          `Tool "${name}" reported that its outcome is unknown (${error.message}). Retry with the same key: onUnknown is ${onUnknown === 'rerun' ? "'rerun', so the handler runs again" : 'a lookup, which found nothing'}.`,
          { final: false, cause: error },
        ),
      };
    }
    return {
      kind: 'handler_threw',
      error,
      final: error instanceof ToolFailure ? error.final : isFinalError(error),
    };
  };

  /**
   * The tool's rule for an unknown outcome: an ending for `'fail'` or a lookup that found the result, undefined
   * when the handler should run (`'rerun'`, or a lookup that found nothing).
   */
  const settleUnknown = async (
    ctx: UnknownRunContext,
    tenant: string,
    scope: CallScope,
    cause?: unknown,
  ): Promise<Ending | undefined> => {
    if (onUnknown === 'rerun') return undefined;
    if (onUnknown === 'fail') {
      const error = cause instanceof OutcomeUnknownError ? cause : interrupted(tenant, ctx.attempt);
      return { kind: 'outcome_unknown', error };
    }
    const found = await scope.run(() => onUnknown(ctx));
    if (found === undefined) return undefined;
    try {
      return { kind: 'recovered', text: jsonText(found, true) };
    } catch (error) {
      if (!(error instanceof NotJsonError)) throw error;
      return { kind: 'result_not_json', error: notJson(error, true) };
    }
  };

  /** Runs the handler in autocommit mode and classifies how it ended. */
  const runPlain = async (attempt: Attempt, handlerContext: HandlerContext): Promise<Ending> => {
    const { facts, started } = attempt;
    let value: unknown;
    try {
      value = await handler(attempt.input, handlerContext);
    } catch (error) {
      facts.executionSeconds = (performance.now() - started) / 1000;
      return thrown(error, attempt.tenant, attempt.unknown, attempt.scope);
    }
    facts.executionSeconds = (performance.now() - started) / 1000;
    try {
      return { kind: 'succeeded', text: jsonText(value, true) };
    } catch (error) {
      if (!(error instanceof NotJsonError)) return { kind: 'result_not_json', error };
      return { kind: 'result_not_json', error: notJson(error, true) };
    }
  };

  /** Runs the handler inside the transaction that completes the row, and classifies how it ended. */
  const runInTransaction = async (
    attempt: Attempt,
    makeContext: (db: Queryable) => HandlerContext,
  ): Promise<Ending> => {
    const { row, input, scope, facts, started } = attempt;
    try {
      return await store.driver.transaction(async (tx): Promise<Ending> => {
        let value: unknown;
        try {
          value = await handler(input, makeContext(tx));
        } catch (error) {
          throw new HandlerThrew(error);
        } finally {
          facts.executionSeconds = (performance.now() - started) / 1000;
        }
        const text = jsonText(value, true);
        const completedAt = await store.complete(
          completionOf(row, 'succeeded', false, text, null),
          scope.recordLedgerOperation,
          tx,
        );
        if (!completedAt) throw leaseLost();
        return { kind: 'committed', text, completedAt };
      });
    } catch (error) {
      // The driver rethrows what the callback threw, or its own error when the connection died under it.
      if (error instanceof HandlerThrew) {
        const ending = await thrown(error.error, attempt.tenant, attempt.unknown, scope);
        return ending.kind === 'handler_threw' ? { ...ending, kind: 'tx_handler_threw' } : ending;
      }
      if (error instanceof NotJsonError) return { kind: 'tx_result_not_json', error: notJson(error, false) };
      if (error instanceof ToolLedgerError && error.code === 'LEASE_LOST')
        return { kind: 'lease_lost', error };
      return { kind: 'tx_driver_failed', error };
    }
  };

  const execute: Execute = async (row, input, context, tenant, scope, facts) => {
    const key = context.key as string;
    const callKey = LostClaims.key(tenant, name, key);
    // A result this process finished for an earlier attempt and could not save before this takeover: save it under
    // this attempt's fence instead of producing it again.
    const held = runtime.saves.held(callKey);
    if (held && held.attempt < row.attempt && held.status === 'succeeded' && held.resultJson !== null) {
      runtime.saves.release(callKey);
      return finish(row, { kind: 'recovered', text: held.resultJson }, callKey, scope, facts);
    }

    const fence = fenceOf(row);
    const lease = runtime.leases.hold(store, fence, leaseSeconds);
    // Made on a handler's first step only: most handlers record none, and a first execution should not pay for it.
    let steps: StepRunner | undefined;
    const step: HandlerContext['step'] = (stepName, fn, options) => {
      steps ??= new StepRunner({
        store,
        held: runtime.heldSteps,
        fence,
        tool: name,
        tenant,
        key,
        records: row.steps,
        token: row.step_token,
        scope,
        signal: () => lease.signal,
        unrecordable:
          transactional && store.driver.kind === 'pglite'
            ? `Tool "${name}" is transactional on the embedded PGlite, which has one connection: the handler's transaction holds it, so ctx.step("${stepName}") could not record the step outside it. Use Postgres (connectionString or pool) for a transactional tool with steps, or make the tool non-transactional.`
            : undefined,
      });
      return steps.step(stepName, fn, options);
    };
    const unknownContext: UnknownRunContext = {
      tool: name,
      tenant,
      key,
      user: context.user,
      attempt: row.attempt,
      input,
    };
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
      step,
    });

    scope.handlerStarted();
    try {
      // The previous attempt held the key and recorded nothing, not even a step: the tool's rule decides.
      if (row.lapsed && (row.steps === null || Object.keys(row.steps).length === 0)) {
        const settled = await settleUnknown(unknownContext, tenant, scope);
        if (settled) return await finish(row, settled, callKey, scope, facts);
      }
      const attempt: Attempt = {
        row,
        input,
        tenant,
        unknown: unknownContext,
        scope,
        facts,
        started: performance.now(),
      };
      const ending = transactional
        ? await runInTransaction(attempt, handlerContext)
        : await runPlain(attempt, handlerContext(undefined));
      return await finish(row, ending, callKey, scope, facts);
    } finally {
      lease.release();
      scope.handlerFinished();
    }
  };
  return execute;
}
