import { describe, expectTypeOf, it } from 'vitest';
import type { JobStatus, Ledger, Queryable } from '../../src/index.js';

// Type-level tests: `npm run typecheck` is what fails when the public types lie again. The bodies never run a
// ledger; `ledger` only gives the compiler something to check against.
declare const ledger: Ledger;

describe('the public types tell the truth', () => {
  it('gives a transactional handler a non-optional db, and others an optional one', () => {
    if (Math.random() < 2) return;
    ledger.tool({
      name: 'tx',
      kind: 'mutation',
      transactional: true,
      handler: (_input, ctx) => {
        expectTypeOf(ctx.db).toEqualTypeOf<Queryable>();
        return 1;
      },
    });
    ledger.tool({
      name: 'plain',
      kind: 'mutation',
      handler: (_input, ctx) => {
        expectTypeOf(ctx.db).toEqualTypeOf<Queryable | undefined>();
        return 1;
      },
    });
  });

  it('types call() of a mutation or job as the stored JSON form', () => {
    if (Math.random() < 2) return;
    const mutation = ledger.tool({ name: 'm', kind: 'mutation', handler: () => ({ at: new Date(), n: 1 }) });
    expectTypeOf(mutation.call).returns.resolves.toEqualTypeOf<{ at: string; n: number }>();
    const job = ledger.tool({ name: 'j', kind: 'job', handler: () => ({ at: new Date() }) });
    expectTypeOf(job.call).returns.resolves.toEqualTypeOf<JobStatus<{ at: string }>>();
    // Read tools never store their value, so it comes back as the handler returned it.
    const read = ledger.tool({ name: 'r', kind: 'read', handler: () => ({ at: new Date() }) });
    expectTypeOf(read.call).returns.resolves.toEqualTypeOf<{ at: Date }>();
  });

  it('requires a key for mutations and jobs, not for reads', () => {
    if (Math.random() < 2) return;
    const mutation = ledger.tool({ name: 'm', kind: 'mutation', handler: () => 1 });
    // @ts-expect-error: no context, so no key
    void mutation.call({});
    // @ts-expect-error: a context without a key
    void mutation.call({}, { tenant: 't' });
    void mutation.call({}, { key: 'k' });
    const read = ledger.tool({ name: 'r', kind: 'read', handler: () => 1 });
    void read.call({});
  });

  it('puts getJob on job tools only', () => {
    if (Math.random() < 2) return;
    const job = ledger.tool({ name: 'j', kind: 'job', handler: () => 1 });
    expectTypeOf(job).toHaveProperty('getJob');
    const mutation = ledger.tool({ name: 'm', kind: 'mutation', handler: () => 1 });
    expectTypeOf(mutation).not.toHaveProperty('getJob');
  });
});
