import type { CallScope } from '../contract/observer.js';
import type { CallContext, HandlerContext } from '../contract/types.js';
import type { Answer } from './call-end.js';
import type { CallFacts } from './facts.js';
import { callHandlerContext } from './handler-context.js';
import { readToolStep } from './messages.js';

/** The read path: read tools skip the ledger and only get telemetry. */
export async function runRead(
  handler: (input: unknown, ctx: HandlerContext) => unknown,
  name: string,
  input: unknown,
  context: CallContext,
  tenant: string,
  scope: CallScope,
  facts: CallFacts,
): Promise<Answer> {
  const started = performance.now();
  scope.handlerStarted();
  let signal: AbortSignal | undefined;
  try {
    const ctx = callHandlerContext(
      {
        tool: name,
        tenant,
        key: context.key,
        user: context.user,
        toolCallId: context.toolCallId,
        attempt: 1,
        jobId: undefined,
        db: undefined,
        renewLease: async () => {},
        step: () => Promise.reject(readToolStep(name)),
      },
      // Never aborted (no lease); one per call, so listeners a handler adds do not pile up; made on first read.
      () => {
        signal ??= new AbortController().signal;
        return signal;
      },
    );
    const value = await handler(input, ctx);
    return { outcome: 'executed', value, paramsHash: undefined, completedAt: new Date(), row: undefined };
  } catch (error) {
    facts.toolError = true;
    throw error;
  } finally {
    facts.executionSeconds = (performance.now() - started) / 1000;
    scope.handlerFinished();
  }
}
