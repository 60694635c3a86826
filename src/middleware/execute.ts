import type { HandlerContext, Queryable, UnknownRunContext } from '../contract/types.js';
import { fenceOf } from '../ledger/fence.js';
import type { Attempt, Execute, ExecutorSettings } from './execution.js';
import { finish } from './finish.js';
import { callHandlerContext } from './handler-context.js';
import { LostClaims } from './lost-claims.js';
import { stepsOnPglite } from './messages.js';
import { runInTransaction, runPlain } from './run-handler.js';
import { StepRunner } from './steps.js';
import { settleUnknown } from './unknown-outcome.js';

/**
 * Runs the handler for a claim a call won, under a renewed lease, and ends it as `ENDING_RULES` says: the fenced
 * completion, a failure (final or retryable) or an unknown outcome. In transactional mode the handler's writes
 * commit with the completion. A result this process already holds for the key is saved, never produced again.
 * The jobs live beside it: running the handler (run-handler.ts), the unknown-outcome rule (unknown-outcome.ts) and
 * finishing (finish.ts); this is the handler's context, its lease, and the dispatch between them.
 */
export function createExecutor(settings: ExecutorSettings): Execute {
  const { runtime, name, transactional, leaseSeconds } = settings;
  const { store } = runtime;

  return async (row, call) => {
    const { input, context, scope, facts } = call;
    const tenant = call.request.tenant;
    const key = context.key as string;
    const callKey = LostClaims.key(tenant, name, key);
    // A result this process finished for an earlier attempt and could not save before this takeover: save it under
    // this attempt's fence instead of producing it again.
    const held = runtime.saves.takeHeld(callKey, row.attempt);
    if (held !== undefined)
      return finish(settings, row, { kind: 'recovered', text: held }, callKey, scope, facts);

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
        waitMs: settings.waitMs,
        unrecordable:
          transactional && store.driver.kind === 'pglite' ? stepsOnPglite(name, stepName) : undefined,
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
    // The signal is made only for a handler that reads it (see callHandlerContext).
    const signalOf = () => lease.signal;
    const handlerContext = (db: Queryable | undefined): HandlerContext =>
      callHandlerContext(
        {
          tool: name,
          tenant,
          key: context.key,
          user: context.user,
          toolCallId: context.toolCallId,
          attempt: row.attempt,
          jobId: row.job_id ?? undefined,
          db,
          renewLease: lease.renew,
          step,
        },
        signalOf,
      );

    scope.handlerStarted();
    try {
      // The previous attempt held the key and recorded nothing, not even a step: the tool's rule decides.
      if (row.lapsed && (row.steps === null || Object.keys(row.steps).length === 0)) {
        const settled = await settleUnknown(settings, unknownContext, scope);
        if (settled) return await finish(settings, row, settled, callKey, scope, facts);
      }
      const attempt: Attempt = {
        row,
        input,
        unknown: unknownContext,
        scope,
        facts,
        started: performance.now(),
      };
      const ran = transactional
        ? runInTransaction(settings, attempt, handlerContext)
        : runPlain(settings, attempt, handlerContext(undefined));
      // A handler that answered at once is finished without awaiting its ending: an await of a plain value still
      // costs two promises and a turn of the microtask queue.
      const ending = ran instanceof Promise ? await ran : ran;
      return await finish(settings, row, ending, callKey, scope, facts);
    } finally {
      lease.release();
      scope.handlerFinished();
    }
  };
}
