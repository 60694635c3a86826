import { describe, expect, it } from 'vitest';
import { DECISION_BACKOFF, RUN_BACKOFF, Waiter, type WaitNotifier } from '../../src/middleware/wait.js';

// The one waiter of the middleware (a duplicate waiting for a run in flight, a call waiting for a decision): its
// steps, bounds and backoff, against a notifier that records what it was asked and answers at once.

function recordingNotifier() {
  const steps: Array<{ runId: string; timeoutMs: number; since: number | undefined }> = [];
  let listens = 0;
  const notifier: WaitNotifier = {
    ensureListening: async () => {
      listens++;
    },
    mark: () => 7,
    wait: async (runId, timeoutMs, _signal, since) => {
      steps.push({ runId, timeoutMs, since });
      return 'timeout' as never;
    },
  };
  return { notifier, steps, listens: () => listens };
}

describe('Waiter', () => {
  it('listens on the first step without sleeping, then backs off with jitter up to its cap', async () => {
    const { notifier, steps, listens } = recordingNotifier();
    const waiter = new Waiter(notifier, { budgetMs: 60_000, ...DECISION_BACKOFF }, undefined);
    expect(await waiter.wait('r1', { since: 3 })).toBe(true);
    expect(listens()).toBe(1);
    expect(steps).toEqual([]);
    for (let i = 0; i < 8; i++) expect(await waiter.wait('r1', { since: 3 })).toBe(true);
    expect(listens()).toBe(1);
    expect(steps.map((s) => s.since)).toEqual(Array(8).fill(3));
    const nominal = [50, 100, 200, 400, 800, 1000, 1000, 1000];
    steps.forEach((step, i) => {
      expect(step.timeoutMs).toBeGreaterThanOrEqual(nominal[i]! * 0.8);
      expect(step.timeoutMs).toBeLessThanOrEqual(nominal[i]! * 1.2);
    });
  });

  it('a step never outlasts the run’s lease; an unregistered read claims again at once, three times at most', async () => {
    const { notifier, steps } = recordingNotifier();
    const waiter = new Waiter(notifier, { budgetMs: 60_000, ...RUN_BACKOFF }, undefined);
    await waiter.wait('r2', { since: 0 });
    await waiter.wait('r2', { since: 0, leaseMs: 5 });
    expect(steps).toHaveLength(1);
    expect(steps[0]!.timeoutMs).toBeLessThanOrEqual(5);
    for (let i = 0; i < 3; i++) await waiter.wait('r2', { since: 0, registered: false });
    expect(steps).toHaveLength(1);
    await waiter.wait('r2', { since: 0, registered: false });
    expect(steps).toHaveLength(2);
  });

  it('ends when the budget is spent or the caller aborted, and keeps waitedMs only once it waited', async () => {
    const { notifier, steps } = recordingNotifier();
    const spent = new Waiter(notifier, { budgetMs: 0, ...DECISION_BACKOFF }, undefined);
    expect(await spent.wait('r3', { since: 0 })).toBe(false);
    expect(spent.waitedMs).toBeUndefined();
    spent.noteRetry();
    expect(spent.waitedMs).toBeGreaterThanOrEqual(0);
    const aborted = new Waiter(notifier, { budgetMs: 60_000, ...RUN_BACKOFF }, AbortSignal.abort());
    expect(await aborted.wait('r3', { since: 0 })).toBe(false);
    expect(steps).toEqual([]);
  });
});
