import { describe, expect, it } from 'vitest';
import { ClaimPath } from '../../../src/ledger/claim-path.js';

describe('ClaimPath', () => {
  it('inserts first until most recent claims found the key there, and switches back as fresh keys return', () => {
    const path = new ClaimPath();
    expect(path.insertFirst).toBe(true);
    // One replay among fresh keys changes nothing.
    path.found(true);
    expect(path.insertFirst).toBe(true);
    let existing = 1;
    while (path.insertFirst && existing < 100) {
      path.found(true);
      existing++;
    }
    expect(existing).toBeGreaterThan(5);
    expect(existing).toBeLessThan(20);
    let fresh = 0;
    while (!path.insertFirst && fresh < 100) {
      path.found(false);
      fresh++;
    }
    expect(fresh).toBeGreaterThan(5);
    expect(fresh).toBeLessThan(20);
  });

  it('an even mix settles on one side without flapping every claim', () => {
    const path = new ClaimPath();
    let switches = 0;
    let last = path.insertFirst;
    for (let i = 0; i < 1000; i++) {
      path.found(i % 2 === 0);
      if (path.insertFirst !== last) switches++;
      last = path.insertFirst;
    }
    expect(switches).toBeLessThanOrEqual(1);
  });
});
