import { jsonText } from '../contract/canonical-json.js';
import { OutcomeUnknownError, ToolFailure, ToolLedgerError } from '../contract/errors.js';
import { NotJsonError } from '../contract/json.js';
import { isThenable } from '../contract/thenable.js';
import type { HandlerContext, Queryable } from '../contract/types.js';
import type { Ending } from './endings.js';
import type { Attempt, ExecutorSettings } from './execution.js';
import { completionOf } from './finish.js';
import { leaseLost, reportedUnknown, resultNotJson } from './messages.js';
import { DECIDED_UNKNOWN } from './steps.js';
import { settleUnknown } from './unknown-outcome.js';

/** The handler's own error, carried through the driver's transaction so it is told apart by type, not identity. */
class HandlerThrew {
  constructor(readonly error: unknown) {}
}

/**
 * Runs the handler in autocommit mode and classifies how it ended. Not an async frame: a handler that answers at
 * once (no promise) is classified at once, and one that returns a promise costs one `then`, where an async frame
 * and its await cost a promise and a turn of the microtask queue each on every first execution.
 */
export function runPlain(
  settings: ExecutorSettings,
  attempt: Attempt,
  handlerContext: HandlerContext,
): Ending | Promise<Ending> {
  let produced: unknown;
  let later: boolean;
  try {
    produced = settings.handler(attempt.input, handlerContext);
    // Inside the try: a `then` getter that throws is the handler's throw, as `await` would make it.
    later = isThenable(produced);
  } catch (error) {
    return threwAfter(settings, attempt, error);
  }
  if (!later) return returnedAfter(settings, attempt, produced);
  return Promise.resolve(produced).then(
    (value) => returnedAfter(settings, attempt, value),
    (error: unknown) => threwAfter(settings, attempt, error),
  );
}

function threwAfter(settings: ExecutorSettings, attempt: Attempt, error: unknown): Promise<Ending> {
  attempt.facts.executionSeconds = (performance.now() - attempt.started) / 1000;
  return thrown(settings, error, attempt);
}

function returnedAfter(settings: ExecutorSettings, attempt: Attempt, value: unknown): Ending {
  attempt.facts.executionSeconds = (performance.now() - attempt.started) / 1000;
  try {
    return { kind: 'succeeded', text: jsonText(value, true) };
  } catch (error) {
    if (!(error instanceof NotJsonError)) return { kind: 'result_not_json', error };
    return { kind: 'result_not_json', error: resultNotJson(settings.name, error, true) };
  }
}

/** Runs the handler inside the transaction that completes the row, and classifies how it ended. */
export async function runInTransaction(
  settings: ExecutorSettings,
  attempt: Attempt,
  makeContext: (db: Queryable) => HandlerContext,
): Promise<Ending> {
  const { store } = settings.runtime;
  const { row, input, scope, facts, started } = attempt;
  try {
    return await store.driver.transaction(async (tx): Promise<Ending> => {
      let value: unknown;
      try {
        value = await settings.handler(input, makeContext(tx));
      } catch (error) {
        throw new HandlerThrew(error);
      } finally {
        facts.executionSeconds = (performance.now() - started) / 1000;
      }
      const text = jsonText(value, true);
      const completedAt = await store.complete(
        completionOf(settings, row, 'succeeded', false, text, null),
        scope.recordLedgerOperation,
        tx,
      );
      if (!completedAt) throw leaseLost(settings.name);
      return { kind: 'committed', text, completedAt };
    });
  } catch (error) {
    // The driver rethrows what the callback threw, or its own error when the connection died under it.
    if (error instanceof HandlerThrew) {
      const ending = await thrown(settings, error.error, attempt);
      return ending.kind === 'handler_threw' ? { ...ending, kind: 'tx_handler_threw' } : ending;
    }
    if (error instanceof NotJsonError)
      return { kind: 'tx_result_not_json', error: resultNotJson(settings.name, error, false) };
    if (error instanceof ToolLedgerError && error.code === 'LEASE_LOST') return { kind: 'lease_lost', error };
    return { kind: 'tx_driver_failed', error };
  }
}

/** The ending of a handler's throw, as its type says. */
async function thrown(settings: ExecutorSettings, error: unknown, attempt: Attempt): Promise<Ending> {
  if (DECIDED_UNKNOWN.has(error as object)) return { kind: 'outcome_unknown', error };
  if (error instanceof ToolLedgerError && error.code === 'LEASE_LOST') return { kind: 'lease_lost', error };
  if (error instanceof OutcomeUnknownError) {
    // The handler says its effect may have happened: the tool's rule decides now, as for a crashed attempt.
    const settled = await settleUnknown(settings, attempt.unknown, attempt.scope, error);
    if (settled) return settled;
    return {
      kind: 'handler_threw',
      final: false,
      error: reportedUnknown(settings.name, error, settings.onUnknown),
    };
  }
  return {
    kind: 'handler_threw',
    error,
    final: error instanceof ToolFailure ? error.final : settings.isFinalError(error),
  };
}
