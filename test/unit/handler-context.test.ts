import { describe, expect, it } from 'vitest';
import {
  callHandlerContext,
  callStepContext,
  type HandlerContextFields,
} from '../../src/middleware/handler-context.js';

const fields: HandlerContextFields = {
  tool: 'refund',
  tenant: 'acme',
  key: 'k-1',
  user: 'u-1',
  toolCallId: 'call-1',
  attempt: 2,
  jobId: undefined,
  db: undefined,
  renewLease: async () => {},
  step: () => Promise.reject(new Error('no steps here')),
};

describe('the handler context', () => {
  it('makes the signal on first read only, and answers the same one after', () => {
    let made = 0;
    let signal: AbortSignal | undefined;
    const ctx = callHandlerContext(fields, () => {
      if (!signal) {
        made++;
        signal = new AbortController().signal;
      }
      return signal;
    });
    expect(made).toBe(0);
    expect(ctx.signal).toBe(ctx.signal);
    expect(made).toBe(1);
  });

  it('carries every field, with the signal on the prototype rather than each context', () => {
    const controller = new AbortController();
    const ctx = callHandlerContext(fields, () => controller.signal);
    const { renewLease, step, ...plain } = fields;
    expect(ctx).toMatchObject(plain);
    expect(ctx.renewLease).toBe(renewLease);
    expect(ctx.step).toBe(step);
    // Documented in handler-context.ts: an own accessor per call kept each call's objects alive too long.
    expect(Object.getOwnPropertyDescriptor(ctx, 'signal')).toBeUndefined();
    expect('signal' in ctx).toBe(true);
    controller.abort('gone');
    expect(ctx.signal.aborted).toBe(true);
  });

  it("gives a step's context its name, key and attempt, and the handler's signal", () => {
    const controller = new AbortController();
    const step = callStepContext('charge', 'tl_abc', 3, () => controller.signal);
    expect(step).toMatchObject({ name: 'charge', key: 'tl_abc', attempt: 3 });
    expect(step.signal).toBe(controller.signal);
    expect(Object.getOwnPropertyDescriptor(step, 'signal')).toBeUndefined();
  });
});
