import type { CallScope } from '../contract/observer.js';
import type { StoredError } from '../contract/types.js';
import type { Completion } from '../ledger/fence.js';
import type { ClaimRow } from '../ledger/run-row.js';
import type { SaveAnswer } from './background-saves.js';
import { ENDING_RULES, type Ending, type EndingKind } from './endings.js';
import type { Executed, ExecutorSettings } from './execution.js';
import type { CallFacts } from './facts.js';
import { toStoredError } from './failures.js';
import { leaseLost, resultNotKept, resultNotSaved } from './messages.js';

/**
 * A completion under the row's fence (`fenceOf`'s fields, written out). One literal of one shape: spreading the
 * fence into it took Node 20's slow path for a spread followed by more fields, 5-7 µs of a first execution.
 */
export function completionOf(
  { ttlSeconds }: ExecutorSettings,
  row: ClaimRow,
  status: Completion['status'],
  final: boolean,
  resultJson: string | null,
  error: StoredError | null,
): Completion {
  return {
    id: row.id,
    runKey: row.runKey,
    attempt: row.attempt,
    leaseOwner: row.lease_owner!,
    partitionKey: row.partition_key,
    status,
    final,
    resultJson,
    error,
    ttlSeconds,
  };
}

/** The completion an ending saves, per its rule; undefined when it saves nothing. */
function completionFor(settings: ExecutorSettings, row: ClaimRow, ending: Ending): Completion | undefined {
  const rule = ENDING_RULES[ending.kind];
  switch (rule.save) {
    case 'result':
      return completionOf(settings, row, 'succeeded', false, ending.text!, null);
    case 'failure': {
      const final = rule.final === 'verdict' ? ending.final === true : rule.final;
      return completionOf(settings, row, 'failed', final, null, toStoredError(ending.error, final));
    }
    case 'unknown':
      return completionOf(settings, row, 'unknown', false, null, toStoredError(ending.error, true));
    case 'nothing':
      return undefined;
  }
}

/**
 * Does what the ending's rule says: saves (or keeps) its completion, then answers or throws. `callKey` is the
 * call's tenant, tool and key (`LostClaims.key`). Called only from the executor's async frame, which turns a throw
 * here into its rejection; not an async function itself, so a first execution's save is one `then`.
 */
export function finish(
  settings: ExecutorSettings,
  row: ClaimRow,
  ending: Ending,
  callKey: string,
  scope: CallScope,
  facts: CallFacts,
): Executed | Promise<Executed> {
  const rule = ENDING_RULES[ending.kind];
  if (rule.toolError) facts.toolError = true;
  const completion = completionFor(settings, row, ending);
  if (!completion) return answerOf(rule, ending, ending.completedAt);
  return settings.runtime.saves
    .save(callKey, settings.name, completion, scope.recordLedgerOperation)
    .then((saved) => afterSave(settings.name, rule, ending, saved));
}

/** An ending's rule, as the table types it: its answer and outcome go together. */
type Rule = (typeof ENDING_RULES)[EndingKind];

/** The answer once the completion's save has gone as `saved` says. */
function afterSave(name: string, rule: Rule, ending: Ending, saved: SaveAnswer): Executed {
  let completedAt: Date | undefined;
  switch (saved.kind) {
    case 'landed':
      completedAt = saved.at;
      break;
    case 'refused':
      break;
    case 'kept':
      if (rule.ifSaveFails === 'keep_and_report') {
        return { outcome: 'failed', error: resultNotSaved(name, saved.error) };
      }
      break;
    case 'dropped':
      if (rule.ifSaveFails === 'keep_and_report') {
        return { outcome: 'failed', error: resultNotKept(name, saved.error, saved.load) };
      }
      break;
  }
  if (!completedAt && rule.answer === 'value') return { outcome: 'failed', error: leaseLost(name) };
  return answerOf(rule, ending, completedAt);
}

function answerOf(rule: Rule, ending: Ending, completedAt: Date | undefined): Executed {
  if (rule.answer === 'the_error') return { outcome: rule.outcome, error: ending.error };
  return { outcome: rule.outcome, value: JSON.parse(ending.text!), completedAt: completedAt! };
}
