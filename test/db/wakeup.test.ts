import { afterAll, describe, expect, it } from 'vitest';
import { CompletionNotifier } from '../../src/ledger/notifier.js';
import { LedgerStore } from '../../src/ledger/store.js';
import { claimRequest } from '../support/claim-request.js';
import { rawDrivers } from '../support/raw-drivers.js';

const ROUNDS = 200;
// Far above any real wake-up; a lost notice shows as a 'timeout' instead of hanging the suite.
const LOST_AFTER_MS = 3000;

const request = (key: string, wouldWait: boolean) =>
  claimRequest(key, { tool: 'race', user: undefined, paramsHash: 'h', wouldWait });

describe.each(rawDrivers)('wake-up registration on %s', (_name, open) => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const fn of cleanup) await fn();
  });

  it(`never loses a wake-up when a waiter races the completion (${ROUNDS} rounds)`, async () => {
    const { driver, schema, distributed, done } = await open('wake');
    const store = new LedgerStore(driver, schema, undefined, 'table', distributed);
    const notifier = new CompletionNotifier(store);
    cleanup.push(async () => {
      await notifier.close();
      await driver.close();
      await done();
    });
    await notifier.ensureListening();
    const seen = { registered: 0, replayed: 0, claimAgain: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      const key = `k${round}`;
      const owner = await store.claim(request(key, false));
      expect(owner?.claim).toBe('inserted');
      const since = notifier.mark();
      const complete = () =>
        store.complete({
          id: owner!.id,
          runKey: owner!.runKey,
          attempt: owner!.attempt,
          leaseOwner: owner!.lease_owner!,
          status: 'succeeded',
          final: false,
          resultJson: JSON.stringify({ round }),
          error: null,
          ttlSeconds: 3600,
        });
      // Both orders, and the moments in between: the completion goes first, second, or a few ticks later.
      const waiterFirst = round % 2 === 0;
      const ticks = round % 5;
      const delayed = async () => {
        for (let t = 0; t < ticks; t++) await new Promise((resolve) => setImmediate(resolve));
        return complete();
      };
      const claimWaiter = () => store.claim(request(key, true));
      const [waiter] = waiterFirst
        ? await Promise.all([claimWaiter(), delayed()])
        : await (async () => {
            const completing = delayed();
            return Promise.all([claimWaiter(), completing]);
          })();
      expect(waiter?.claim).toBe('existing');
      if (waiter!.status === 'succeeded') {
        seen.replayed++;
        continue;
      }
      expect(waiter!.status).toBe('in_progress');
      if (!waiter!.waiting) {
        // The completion won the row lock: the registration saw it and says so; a new claim replays.
        seen.claimAgain++;
        expect((await store.claim(request(key, true)))?.status).toBe('succeeded');
        continue;
      }
      seen.registered++;
      expect(await notifier.wait(waiter!.id, LOST_AFTER_MS, undefined, since)).toBe('notified');
    }
    // The race must have been run, not only its easy ends.
    expect(seen.registered).toBeGreaterThan(0);
    expect(seen.registered + seen.replayed + seen.claimAgain).toBe(ROUNDS);
    // Bounded in count; the time bound is generous because in-process PGlite on a loaded machine is slow.
  }, 240_000);

  it('does not notify a completion nobody waits for', async () => {
    const { driver, schema, distributed, done } = await open('wake');
    const store = new LedgerStore(driver, schema, undefined, 'table', distributed);
    const notifier = new CompletionNotifier(store);
    cleanup.push(async () => {
      await notifier.close();
      await driver.close();
      await done();
    });
    await notifier.ensureListening();
    const owner = await store.claim(request('alone', false));
    // A duplicate that would not wait (a job, or waitSeconds 0) does not register either.
    expect((await store.claim(request('alone', false)))?.waiting).toBe(false);
    const since = notifier.mark();
    await store.complete({
      id: owner!.id,
      runKey: owner!.runKey,
      attempt: owner!.attempt,
      leaseOwner: owner!.lease_owner!,
      status: 'succeeded',
      final: false,
      resultJson: '1',
      error: null,
      ttlSeconds: 3600,
    });
    expect(await notifier.wait(owner!.id, 200, undefined, since)).toBe('timeout');
  });
});
