import { describe, expect, it } from 'vitest';
import type { ClaimRow } from '../../../src/ledger/run-row.js';
import { LostClaims } from '../../../src/middleware/lost-claims.js';
import { judgeClaim } from '../../../src/middleware/verdict.js';

describe('lost claims', () => {
  it('hands a token to one retry only', () => {
    const lost = new LostClaims();
    const key = LostClaims.key('default', 'charge', 'k');
    lost.remember(key, 'owner-1', 30);
    expect(lost.take(key)).toBe('owner-1');
    expect(lost.take(key)).toBeUndefined();
  });

  it('finds a token by the call’s tenant, tool and key, and finds none when none is kept', () => {
    const lost = new LostClaims();
    expect(lost.takeFor('default', 'charge', 'k')).toBeUndefined();
    lost.remember(LostClaims.key('default', 'charge', 'k'), 'owner-1', 30);
    expect(lost.takeFor('default', 'charge', 'other')).toBeUndefined();
    expect(lost.takeFor('default', 'charge', 'k')).toBe('owner-1');
    expect(lost.takeFor('default', 'charge', 'k')).toBeUndefined();
  });

  it('forgets a token once its lease would have lapsed, and the oldest past the cap', () => {
    const lost = new LostClaims(2);
    lost.remember('a', 'owner-a', 0);
    expect(lost.take('a')).toBeUndefined();
    lost.remember('b', 'owner-b', 30);
    lost.remember('c', 'owner-c', 30);
    lost.remember('d', 'owner-d', 30);
    expect([lost.take('b'), lost.take('c'), lost.take('d')]).toEqual([undefined, 'owner-c', 'owner-d']);
  });

  it('makes a row held under the retry’s own token a reclaimed verdict, and anyone else’s a running one', () => {
    const now = new Date();
    const row = {
      claim: 'existing',
      takeover_due: false,
      lease_live: true,
      status: 'in_progress',
      user_id: null,
      parameter_hash: 'h',
      lease_owner: 'owner-1',
      db_now: now,
    } as unknown as ClaimRow;
    expect(judgeClaim(row, { user: undefined, paramsHash: 'h', leaseOwner: 'owner-1' }).kind).toBe(
      'reclaimed',
    );
    expect(judgeClaim(row, { user: undefined, paramsHash: 'h', leaseOwner: 'owner-2' }).kind).toBe('running');
    // Another request under the same key is still a conflict, token or not.
    expect(judgeClaim(row, { user: undefined, paramsHash: 'x', leaseOwner: 'owner-1' }).kind).toBe(
      'conflict',
    );
  });
});
