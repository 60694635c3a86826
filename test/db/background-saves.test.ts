import { afterAll, describe, expect, it } from 'vitest';
import { type Completion, fenceOf } from '../../src/ledger/fence.js';
import { cacheKey } from '../../src/ledger/result-cache.js';
import { LedgerStore } from '../../src/ledger/store.js';
import { BackgroundSaves } from '../../src/middleware/background-saves.js';
import { claimRequest } from '../support/claim-request.js';
import { rawDrivers } from '../support/raw-drivers.js';

// A completion's first save and a retry's save of it from the same process (`BackgroundSaves.flush`), on real
// Postgres and PGlite. The two writes carry the same fence, so one lands and the other is refused. When the retry's
// write lands first but its answer comes back after the first save's refusal, the first save must still report
// its result landed: once it reported a refusal, its caller answered "lease lost" for a result that was saved
// (seen in CI as one of eight concurrent retries failing after an approval).

/** A promise and the function that settles it. */
function gate(): { readonly opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

describe.each(rawDrivers)('background saves on %s', (_name, open) => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const fn of cleanup) await fn();
  });

  async function claimed(key: string) {
    const { driver, schema, distributed, done } = await open('saves');
    cleanup.push(done);
    const store = new LedgerStore(driver, schema, undefined, 'table', distributed);
    const row = await store.claim(claimRequest(key, { tool: 'saves' }));
    if (!row) throw new Error('no claim');
    const completion: Completion = {
      ...fenceOf(row),
      status: 'succeeded',
      final: false,
      resultJson: '{"ok":1}',
      error: null,
      ttlSeconds: 3600,
    };
    const status = async () =>
      (
        await driver.query<{ status: string }>(
          `SELECT status FROM "${schema}".tool_runs WHERE idempotency_key = $1`,
          [key],
        )
      ).rows[0]?.status;
    return { store, completion, status };
  }

  /** Saves whose store holds the first write back until `first` opens and the retry's answer until `retry` opens. */
  function ordered(store: LedgerStore, firstWrite: 'answers' | 'fails') {
    const first = gate();
    const retry = gate();
    const retryLanded = gate();
    const firstAnswered = gate();
    let writes = 0;
    const gated = {
      complete: async (completion: Completion) => {
        const write = ++writes;
        if (write === 1) {
          await first.opened;
          try {
            if (firstWrite === 'fails') throw new Error('connection terminated unexpectedly');
            return await store.complete(completion);
          } finally {
            firstAnswered.open();
          }
        }
        if (write === 2) {
          const at = await store.complete(completion);
          retryLanded.open();
          await retry.opened;
          return at;
        }
        return store.complete(completion);
      },
    } as unknown as LedgerStore;
    const saves = new BackgroundSaves({
      store: gated,
      limits: { maxCount: 10, maxBytes: 1_000_000 },
      changed: () => {},
      track: () => {},
      onClose: () => {},
    });
    return { saves, first, retry, retryLanded, firstAnswered };
  }

  it("a retry's write that lands first, answering after the first save's refusal, counts as the first save's", async () => {
    const { store, completion, status } = await claimed('race');
    const { saves, first, retry, retryLanded, firstAnswered } = ordered(store, 'answers');
    const saving = saves.save(cacheKey('t', 'saves', 'race'), 'saves', completion, () => {});
    // The first save is held back: the retry from this process sends the same completion and lands.
    const flushing = saves.flush('t', 'saves', 'race');
    expect(flushing).toBeDefined();
    await retryLanded.opened;
    expect(await status()).toBe('succeeded');
    // Now the first write reaches the row: its fence is spent, so it is refused, while the retry's answer is held.
    first.open();
    await firstAnswered.opened;
    retry.open();
    expect((await saving).kind).toBe('landed');
    await flushing;
  });

  it('the same when the first write fails and its resend is refused', async () => {
    const { store, completion } = await claimed('fails');
    const { saves, first, retry, retryLanded, firstAnswered } = ordered(store, 'fails');
    const saving = saves.save(cacheKey('t', 'saves', 'fails'), 'saves', completion, () => {});
    const flushing = saves.flush('t', 'saves', 'fails');
    await retryLanded.opened;
    first.open();
    await firstAnswered.opened;
    // The resend (retryWrite, after 100 ms) is refused by the fence, before the retry answers.
    await new Promise((resolve) => setTimeout(resolve, 300));
    retry.open();
    expect((await saving).kind).toBe('landed');
    await flushing;
  });

  it('a first save refused with no retry of its own process is refused', async () => {
    const { store, completion } = await claimed('taken');
    const saves = new BackgroundSaves({
      store,
      limits: { maxCount: 10, maxBytes: 1_000_000 },
      changed: () => {},
      track: () => {},
      onClose: () => {},
    });
    // Another caller's fence: the attempt after this one.
    const answer = await saves.save(
      cacheKey('t', 'saves', 'taken'),
      'saves',
      { ...completion, attempt: 2 },
      () => {},
    );
    expect(answer.kind).toBe('refused');
  });
});
