import { jsonText } from '../contract/canonical-json.js';
import { OutcomeUnknownError } from '../contract/errors.js';
import { NotJsonError } from '../contract/json.js';
import type { CallScope } from '../contract/observer.js';
import type { UnknownRunContext } from '../contract/types.js';
import type { Ending } from './endings.js';
import type { ExecutorSettings } from './execution.js';
import { interrupted, resultNotJson } from './messages.js';

/**
 * The tool's rule for an unknown outcome (an earlier attempt that recorded nothing, or a handler that threw
 * `OutcomeUnknownError`): an ending for `'fail'` or for a lookup that found the result; undefined when the handler
 * should run (`'rerun'`, or a lookup that found nothing).
 */
export async function settleUnknown(
  { name, onUnknown }: ExecutorSettings,
  ctx: UnknownRunContext,
  scope: CallScope,
  cause?: unknown,
): Promise<Ending | undefined> {
  if (onUnknown === 'rerun') return undefined;
  if (onUnknown === 'fail') {
    const error = cause instanceof OutcomeUnknownError ? cause : interrupted(name, ctx.tenant, ctx.attempt);
    return { kind: 'outcome_unknown', error };
  }
  const found = await scope.run(() => onUnknown(ctx));
  if (found === undefined) return undefined;
  try {
    return { kind: 'recovered', text: jsonText(found, true) };
  } catch (error) {
    if (!(error instanceof NotJsonError)) throw error;
    return { kind: 'result_not_json', error: resultNotJson(name, error, true) };
  }
}
