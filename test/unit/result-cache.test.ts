import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { cacheKey, ResultCache } from '../../src/ledger/result-cache.js';
import type { RunRow } from '../../src/ledger/run-row.js';

const dbNow = new Date('2026-01-01T00:00:00Z');

function row(overrides: Partial<RunRow> = {}): RunRow {
  return {
    id: '1',
    user_id: null,
    parameter_hash: 'h',
    status: 'succeeded',
    final: false,
    attempt: 1,
    lease_owner: null,
    lease_remaining_ms: null,
    result_json: { ok: true, lines: [1, 2] },
    error_json: null,
    job_id: null,
    trace_id: null,
    span_id: null,
    completed_at: dbNow,
    expires_in_ms: 60_000,
    lease_live: false,
    ...overrides,
  };
}

/** The cache key of key `k` (or another) of tool `t` in the default tenant. */
const k = (key = 'k') => cacheKey('default', 't', key);

/** The key replays name; the cache only hands it back on the row. */
const RUN_KEY = { tenant: 'default', tool: 't', key: 'k' };

const limits = { maxEntries: 100, maxBytes: 1_000_000 };

describe('replay cache', () => {
  it('replays a completed row for the same user and parameters, as a fresh copy each time', () => {
    const cache = new ResultCache(limits);
    cache.remember(k(), row(), performance.now());
    const first = cache.replay(cacheKey('default', 't', 'k'), null, 'h', RUN_KEY);
    expect(first).toMatchObject({
      claim: 'existing',
      status: 'succeeded',
      result_json: { ok: true, lines: [1, 2] },
    });
    (first!.result_json as { lines: number[] }).lines.push(3);
    expect(cache.replay(cacheKey('default', 't', 'k'), null, 'h', RUN_KEY)?.result_json).toEqual({
      ok: true,
      lines: [1, 2],
    });
  });

  it('gives each replay its own completion time, equal to the one remembered', () => {
    const cache = new ResultCache(limits);
    cache.remember(k(), row(), performance.now());
    const first = cache.replay(k(), null, 'h', RUN_KEY)!.completed_at!;
    first.setTime(0);
    const second = cache.replay(k(), null, 'h', RUN_KEY)!.completed_at!;
    expect(second).not.toBe(first);
    expect(second.getTime()).toBe(dbNow.getTime());
  });

  it('keys a run by its tenant, tool and key joined with NUL, which none of them may hold', () => {
    expect(cacheKey('t', 'tool', 'k')).toBe('t\u0000tool\u0000k');
  });

  it('leaves other parameters, another user, another tenant or tool to the database', () => {
    const cache = new ResultCache(limits);
    cache.remember(k(), row({ user_id: 'u1' }), performance.now());
    expect(cache.replay(cacheKey('default', 't', 'k'), 'u1', 'other', RUN_KEY)).toBeUndefined();
    expect(cache.replay(cacheKey('default', 't', 'k'), 'u2', 'h', RUN_KEY)).toBeUndefined();
    expect(cache.replay(cacheKey('default', 't', 'k'), null, 'h', RUN_KEY)).toBeUndefined();
    expect(cache.replay(cacheKey('acme', 't', 'k'), 'u1', 'h', RUN_KEY)).toBeUndefined();
    expect(cache.replay(cacheKey('default', 'u', 'k'), 'u1', 'h', RUN_KEY)).toBeUndefined();
    expect(cache.replay(cacheKey('default', 't', 'k'), 'u1', 'h', RUN_KEY)).toBeDefined();
  });

  it('keeps only completed rows that have not expired by the database clock', async () => {
    const cache = new ResultCache(limits);
    cache.remember(k('running'), row({ status: 'in_progress' }), performance.now());
    cache.remember(k('retryable'), row({ status: 'failed', final: false }), performance.now());
    cache.remember(k('gone'), row({ expires_in_ms: 0 }), performance.now());
    // The database clock may be far from this one: only the time left counts, from when the statement was sent.
    cache.remember(k('soon'), row({ expires_in_ms: 20 }), performance.now());
    cache.remember(k('final'), row({ status: 'failed', final: true }), performance.now());
    expect(cache.size).toBe(2);
    expect(cache.replay(cacheKey('default', 't', 'final'), null, 'h', RUN_KEY)?.status).toBe('failed');
    expect(cache.replay(cacheKey('default', 't', 'soon'), null, 'h', RUN_KEY)).toBeDefined();
    await sleep(40);
    expect(cache.replay(cacheKey('default', 't', 'soon'), null, 'h', RUN_KEY)).toBeUndefined();
    expect(cache.size).toBe(1);
  });

  it('counts the round trip against the entry: the deadline runs from when the statement was sent', () => {
    const cache = new ResultCache(limits);
    const sentAt = performance.now() - 61_000;
    cache.remember(k(), row(), sentAt);
    expect(cache.replay(cacheKey('default', 't', 'k'), null, 'h', RUN_KEY)).toBeUndefined();
  });

  it('is bounded by entries and by bytes, dropping the least recently used', () => {
    const cache = new ResultCache({ maxEntries: 3, maxBytes: 1_000_000 });
    const completed = (key: string) =>
      cache.remember(k(key), row({ status: 'in_progress' }), performance.now(), {
        status: 'succeeded',
        final: false,
        completedAt: dbNow,
        expiresInMs: 60_000,
        resultText: '1',
        errorText: null,
      });
    for (const key of ['a', 'b', 'c']) completed(key);
    // A completion written here replays with what it wrote, not the in-flight row it was claimed as.
    expect(cache.replay(cacheKey('default', 't', 'c'), null, 'h', RUN_KEY)).toMatchObject({
      status: 'succeeded',
      lease_owner: null,
      lease_remaining_ms: null,
      lease_live: false,
      result_json: 1,
      completed_at: dbNow,
    });
    cache.replay(cacheKey('default', 't', 'a'), null, 'h', RUN_KEY);
    completed('d');
    expect(cache.size).toBe(3);
    expect(cache.replay(cacheKey('default', 't', 'b'), null, 'h', RUN_KEY)).toBeUndefined();
    expect(cache.replay(cacheKey('default', 't', 'a'), null, 'h', RUN_KEY)).toBeDefined();
    // A row only read takes free room only: replaying more keys than fit, in order, keeps the cache useful.
    cache.remember(k('read'), row(), performance.now());
    expect(cache.replay(cacheKey('default', 't', 'read'), null, 'h', RUN_KEY)).toBeUndefined();
    expect(cache.replay(cacheKey('default', 't', 'c'), null, 'h', RUN_KEY)).toBeDefined();

    const small = new ResultCache({ maxEntries: 1000, maxBytes: 10_000 });
    const big = { text: 'x'.repeat(2000) };
    for (let i = 0; i < 20; i++) small.remember(k(`k${i}`), row({ result_json: big }), performance.now());
    expect(small.bytes).toBeLessThanOrEqual(10_000);
    expect(small.size).toBeGreaterThan(0);
    expect(small.replay(cacheKey('default', 't', 'k19'), null, 'h', RUN_KEY)).toBeDefined();
    // A result larger than the whole bound is never cached.
    small.remember(k('huge'), row({ result_json: 'y'.repeat(20_000) }), performance.now());
    expect(small.replay(cacheKey('default', 't', 'huge'), null, 'h', RUN_KEY)).toBeUndefined();
  });

  it('caches nothing when turned off', () => {
    const cache = new ResultCache({ maxEntries: 0, maxBytes: 1_000_000 });
    cache.remember(k(), row(), performance.now());
    expect(cache.size).toBe(0);
  });
});
