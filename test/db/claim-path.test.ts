import { afterAll, describe, expect, it } from 'vitest';
import type { ClaimRow } from '../../src/ledger/run-row.js';
import { type ClaimRequest, LedgerStore } from '../../src/ledger/store.js';
import { claimRequest } from '../support/claim-request.js';
import { rawDrivers } from '../support/raw-drivers.js';

const request = (key: string, overrides: Partial<ClaimRequest> = {}): ClaimRequest =>
  claimRequest(key, {
    tool: 'path',
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    ...overrides,
  });

/** Everything but what differs between two claims by design (id, token, key) or by the clock. */
function comparable(row: ClaimRow) {
  const { id, lease_owner, lease_remaining_ms, expires_in_ms, runKey, ...rest } = row;
  return {
    ...rest,
    tenant: runKey.tenant,
    tool: runKey.tool,
    hasId: /^\d+$/.test(id),
    leaseSeconds: Math.round((lease_remaining_ms ?? 0) / 1000),
    ttlSeconds: Math.round(expires_in_ms / 1000),
  };
}

describe.each(rawDrivers)('the claim path on %s', (_name, open) => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const fn of cleanup) await fn();
  });

  it('a fresh key gets the same row from the bare insert as from the full claim', async () => {
    const { driver, schema, distributed, done } = await open('path');
    cleanup.push(done);
    const store = new LedgerStore(driver, schema, undefined, 'table', distributed);
    expect(store.insertsFirst).toBe(true);
    const viaInsert = await store.claim(request('fresh-1', { jobId: 'job-1' }));

    // Replays of keys that exist turn this store to the full claim first; fresh keys turn it back.
    for (let i = 0; i < 20; i++) await store.claim(request('fresh-1', { jobId: 'job-1' }));
    expect(store.insertsFirst).toBe(false);
    const viaClaim = await store.claim(request('fresh-2', { jobId: 'job-1' }));
    for (let i = 0; i < 20; i++) await store.claim(request(`fresh-more-${i}`));
    expect(store.insertsFirst).toBe(true);

    expect(viaInsert && comparable(viaInsert)).toEqual(viaClaim && comparable(viaClaim));
    // Each row carries the key it was claimed under, for the fenced writes that follow.
    expect([viaInsert?.runKey.key, viaClaim?.runKey.key]).toEqual(['fresh-1', 'fresh-2']);
    expect(viaInsert).toMatchObject({
      claim: 'inserted',
      attempt: 1,
      status: 'in_progress',
      lease_live: true,
    });
    expect(viaInsert?.id).not.toBe(viaClaim?.id);
  });

  it('a key that exists is judged by the full claim whichever statement goes first', async () => {
    const { driver, schema, distributed, done } = await open('path');
    cleanup.push(done);
    const store = new LedgerStore(driver, schema, undefined, 'table', distributed);
    const first = await store.claim(request('held'));
    // A retryable failure: the next claim with the same user and parameters takes it over (attempt 2).
    await store.complete({
      id: first!.id,
      runKey: first!.runKey,
      attempt: 1,
      leaseOwner: first!.lease_owner!,
      status: 'failed',
      final: false,
      resultJson: null,
      error: { name: 'Error', code: 'HANDLER_ERROR', message: 'flaky', final: false },
      ttlSeconds: 3600,
    });
    expect(store.insertsFirst).toBe(true);
    const taken = await store.claim(request('held'));
    expect(taken).toMatchObject({ claim: 'taken', attempt: 2, id: first!.id });
    // In flight under a live lease: another caller sees it as it stands, with the original user and parameters.
    const other = await store.claim(request('held', { user: 'u2', paramsHash: 'h2' }));
    expect(other).toMatchObject({ claim: 'existing', attempt: 2, user_id: 'u1', parameter_hash: 'h1' });
    expect(other?.lease_live).toBe(true);
  });

  it("a completion's time is the Date a later read of the row gives, to the millisecond", async () => {
    const { driver, schema, distributed, done } = await open('path');
    cleanup.push(done);
    const writer = new LedgerStore(driver, schema, undefined, 'table', distributed);
    const reader = new LedgerStore(driver, schema, undefined, 'table', distributed);
    for (let i = 0; i < 30; i++) {
      const claimed = await writer.claim(request(`timed-${i}`));
      const completedAt = await writer.complete({
        id: claimed!.id,
        runKey: claimed!.runKey,
        attempt: 1,
        leaseOwner: claimed!.lease_owner!,
        status: 'succeeded',
        final: false,
        resultJson: '{}',
        error: null,
        ttlSeconds: 3600,
      });
      const read = await reader.claim(request(`timed-${i}`));
      expect(read?.claim).toBe('existing');
      expect(completedAt?.getTime()).toBe(read?.completed_at?.getTime());
    }
  });
});
