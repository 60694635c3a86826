import { describe, expect, it } from 'vitest';
import type { ClaimRow } from '../../src/ledger/run-row.js';
import { judgeClaim } from '../../src/middleware/verdict.js';

const now = new Date('2026-01-01T00:00:00Z');

function row(overrides: Partial<ClaimRow> = {}): ClaimRow {
  return {
    claim: 'existing',
    runKey: { tenant: 'default', tool: 't', key: 'k' },
    takeover_due: false,
    waiting: false,
    steps: null,
    step_token: null,
    lapsed: false,
    lease_live: false,
    id: '1',
    user_id: null,
    parameter_hash: 'h',
    status: 'succeeded',
    final: false,
    attempt: 1,
    lease_owner: null,
    lease_remaining_ms: null,
    result_json: { ok: true },
    error_json: null,
    job_id: null,
    trace_id: null,
    span_id: null,
    completed_at: now,
    expires_in_ms: 60_000,
    ...overrides,
  };
}

const request = { user: undefined, paramsHash: 'h' };

describe('judgeClaim', () => {
  it.each([
    ['no row (a parallel insert won)', undefined, 'raced'],
    ['a fresh insert', row({ claim: 'inserted', status: 'in_progress', lease_live: true }), 'won'],
    ['a takeover', row({ claim: 'taken', status: 'in_progress', lease_live: true, attempt: 2 }), 'won'],
    ['a saved success', row(), 'replay'],
    ['a saved final failure', row({ status: 'failed', final: true }), 'final_failure'],
    ['a live lease', row({ status: 'in_progress', lease_live: true }), 'running'],
    ['a lapsed lease the claim may not take over', row({ status: 'in_progress' }), 'abandoned'],
    // The statement's own rule said "take over" but its fenced update found the row changed.
    [
      'a row due for takeover that someone else changed',
      row({ status: 'failed', takeover_due: true }),
      'raced',
    ],
    ['an expired row someone else changed', row({ takeover_due: true, user_id: 'other' }), 'raced'],
  ] as const)('%s → %s', (_label, claimRow, kind) => {
    expect(judgeClaim(claimRow, request).kind).toBe(kind);
  });

  it('refuses another user before comparing parameters', () => {
    const verdict = judgeClaim(row({ user_id: 'alice', parameter_hash: 'other' }), {
      ...request,
      user: 'bob',
    });
    expect(verdict).toMatchObject({ kind: 'conflict', reason: 'user_mismatch' });
  });

  it('refuses different parameters for the same user', () => {
    const verdict = judgeClaim(row({ user_id: 'alice', parameter_hash: 'other' }), {
      ...request,
      user: 'alice',
    });
    expect(verdict).toMatchObject({ kind: 'conflict', reason: 'params_mismatch' });
  });

  it('treats a missing user and a stored NULL as the same user', () => {
    expect(judgeClaim(row({ user_id: null }), request).kind).toBe('replay');
    expect(judgeClaim(row({ user_id: null }), { ...request, user: 'alice' })).toMatchObject({
      kind: 'conflict',
      reason: 'user_mismatch',
    });
  });

  it('reads flags only: a lease that the row says lapsed is lapsed whatever the timestamps say', () => {
    expect(
      judgeClaim(row({ status: 'in_progress', lease_remaining_ms: 60_000, lease_live: false }), request).kind,
    ).toBe('abandoned');
  });
});

describe('an answer that is not a claim row', () => {
  it('is refused as a retryable LEDGER_UNAVAILABLE, never judged as won', () => {
    for (const claim of [undefined, null, 'other', 1]) {
      expect(() => judgeClaim(row({ claim: claim as never }), { user: undefined, paramsHash: 'h' })).toThrow(
        expect.objectContaining({ code: 'LEDGER_UNAVAILABLE', retryable: true }),
      );
    }
  });
});
