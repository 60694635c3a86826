import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError, type StepContext, type StepOptions } from '../../src/index.js';
import { pgliteBackend, postgresBackend } from '../support/db.js';

// Recorded steps and unknown outcomes (issue 22) on real Postgres. A crashed attempt is made the way a crash
// leaves it: a first call whose handler is stuck mid-step while its lease is stolen (as a lapse would leave it),
// so its renewals and later writes are refused by the fence. Another ledger (another process, for the ledger)
// then retries the key.

const backend = postgresBackend();

/** A promise and its resolver, for a handler to wait on. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Makes the run of `key` look crashed: its lease lapsed under an owner nobody holds. */
async function crash(schema: string, key: string): Promise<void> {
  await backend.sql(
    `UPDATE "${schema}".tool_runs SET lease_owner = 'crashed:1', lease_expires_at = now() - interval '1 second' WHERE idempotency_key = $1`,
    [key],
  );
}

async function rowOf(schema: string, key: string) {
  const rows = await backend.sql<{
    status: string;
    attempt: number;
    steps: Record<string, { status: string }>;
  }>(`SELECT status, attempt, steps FROM "${schema}".tool_runs WHERE idempotency_key = $1`, [key]);
  return rows[0];
}

/** A two-step handler (charge, then e-mail) that counts each effect and can be held inside the e-mail step. */
function payment(emailOptions: StepOptions<unknown> = {}) {
  const effects = { charge: 0, email: 0 };
  const keys: { charge: string[]; email: string[] } = { charge: [], email: [] };
  let hold: Promise<void> | undefined;
  const handler = async (
    input: { amount: number },
    ctx: { step: <T>(n: string, f: (s: StepContext) => T, o?: StepOptions<T>) => Promise<unknown> },
  ) => {
    const charge = (await ctx.step(
      'charge',
      (s) => {
        keys.charge.push(s.key);
        effects.charge++;
        return { chargeId: `ch_${input.amount}` };
      },
      { onUnknown: 'rerun' },
    )) as { chargeId: string };
    const email = await ctx.step(
      'email',
      async (s) => {
        keys.email.push(s.key);
        effects.email++;
        if (hold) await hold;
        return { sent: true };
      },
      emailOptions,
    );
    return { charge, email };
  };
  return {
    effects,
    keys,
    handler,
    holdEmail(promise: Promise<void>) {
      hold = promise;
    },
    release() {
      hold = undefined;
    },
  };
}

/**
 * A first call (ledger A) held inside its e-mail step, then crashed; ledger B is the process that retries.
 * `finish` lets A's stuck handler go once B has answered, and returns what A's caller got.
 */
async function crashedInsideEmail(emailOptions: StepOptions<unknown>, key: string) {
  const a = await backend.open();
  const b = await backend.open({ schema: a.schema });
  const p = payment(emailOptions);
  const held = gate();
  p.holdEmail(held.promise);
  const toolA = a.tool({ name: 'pay', kind: 'mutation', handler: p.handler as never });
  const toolB = b.tool({ name: 'pay', kind: 'mutation', handler: p.handler as never });
  const stuck = toolA.invoke({ amount: 7 }, { key });
  await expect.poll(() => p.effects.email, { timeout: 10_000 }).toBe(1);
  await crash(a.schema, key);
  p.release();
  return {
    p,
    schema: a.schema,
    retry: () => toolB.invoke({ amount: 7 }, { key }),
    finish: () => {
      held.open();
      return stuck.then(
        () => undefined,
        (error: unknown) => error,
      );
    },
  };
}

describe('recorded steps', () => {
  it('saves each step before it returns, and a replay runs none of them again', async () => {
    // Prepare
    const ledger = await backend.open();
    const p = payment();
    const tool = ledger.tool({ name: 'pay', kind: 'mutation', handler: p.handler as never });

    // Act
    const first = await tool.invoke({ amount: 5 }, { key: 'k1' });
    const again = await tool.invoke({ amount: 5 }, { key: 'k1' });

    // Assess
    expect(first).toMatchObject({
      outcome: 'executed',
      value: { charge: { chargeId: 'ch_5' }, email: { sent: true } },
    });
    expect(again).toMatchObject({ outcome: 'replayed', value: first.value });
    expect(p.effects).toEqual({ charge: 1, email: 1 });
    const row = await rowOf(ledger.schema, 'k1');
    expect(row?.steps.charge).toMatchObject({
      status: 'succeeded',
      attempt: 1,
      result: '{"chargeId":"ch_5"}',
    });
    expect(row?.steps.email).toMatchObject({ status: 'succeeded' });
  });

  it('gives each step a provider key that is stable, distinct per scope and step, and fits providers', async () => {
    // Prepare
    const ledger = await backend.open();
    const seen: string[] = [];
    const [one, two] = ['one', 'two'].map((name) =>
      ledger.tool({
        name,
        kind: 'mutation',
        handler: async (_: unknown, ctx) => {
          seen.push(await ctx.step('a', (s) => s.key), await ctx.step('b', (s) => s.key));
          return null;
        },
      }),
    ) as [ReturnType<typeof ledger.tool>, ReturnType<typeof ledger.tool>];

    // Act
    await one.call({}, { key: 'k' });
    await one.call({}, { key: 'k2' });
    await two.call({}, { key: 'k' });
    await one.call({}, { key: 'k', tenant: 'other' });

    // Assess
    expect(new Set(seen).size).toBe(8);
    for (const key of seen) expect(key).toMatch(/^tl_[A-Za-z0-9_-]{43}$/);
  });

  it('after a crash inside a later step, replays the finished step and reruns a repeatable one with the same key', async () => {
    // Prepare
    const crashed = await crashedInsideEmail({ onUnknown: 'rerun' }, 'k-crash');

    // Act
    const retried = await crashed.retry();
    const stuck = await crashed.finish();

    // Assess
    expect(retried).toMatchObject({ outcome: 'executed', attempt: 2 });
    expect(crashed.p.effects).toEqual({ charge: 1, email: 2 });
    // The rerun passes the same provider key, so a provider that dedupes sees one request.
    expect(crashed.p.keys.email[0]).toBe(crashed.p.keys.email[1]);
    expect(stuck).toMatchObject({ code: 'LEASE_LOST' });
  });

  it("ends with a final OUTCOME_UNKNOWN for an interrupted step whose rule is 'fail' (the default), and keeps it", async () => {
    // Prepare
    const crashed = await crashedInsideEmail({}, 'k-unknown');

    // Act
    const retried = crashed.retry();
    const later = retried.catch(() => crashed.retry());

    // Assess
    await expect(retried).rejects.toMatchObject({ code: 'OUTCOME_UNKNOWN', retryable: false });
    await expect(retried).rejects.toThrow(/tool-ledger resolve/);
    await expect(later).rejects.toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expect(crashed.p.effects).toEqual({ charge: 1, email: 1 });
    expect(await rowOf(crashed.schema, 'k-unknown')).toMatchObject({ status: 'unknown', attempt: 2 });
    expect(await crashed.finish()).toMatchObject({ code: 'LEASE_LOST' });
  });

  it('takes a lookup’s value as the step’s result, and runs the step when the lookup finds nothing', async () => {
    for (const found of [{ sent: 'looked up' }, undefined]) {
      // Prepare
      const lookups: StepContext[] = [];
      const crashed = await crashedInsideEmail(
        {
          onUnknown: async (s) => {
            lookups.push(s);
            return found;
          },
        },
        `k-look-${found ? 'found' : 'none'}`,
      );

      // Act
      const retried = await crashed.retry();
      await crashed.finish();

      // Assess
      expect(lookups).toHaveLength(1);
      expect(lookups[0]?.key).toBe(crashed.p.keys.email[0]);
      expect(retried.value).toMatchObject({ email: found ?? { sent: true } });
      expect(crashed.p.effects.email).toBe(found ? 1 : 2);
      expect(crashed.p.effects.charge).toBe(1);
    }
  });

  it("ends at once as unknown when a step throws OutcomeUnknownError under 'fail'", async () => {
    // Prepare
    const ledger = await backend.open();
    let sends = 0;
    const tool = ledger.tool({
      name: 'send',
      kind: 'mutation',
      handler: async (_: unknown, ctx) =>
        ctx.step('send', () => {
          sends++;
          throw new OutcomeUnknownError('the provider hung up after the request was sent');
        }),
    });

    // Act
    const first = tool.invoke({}, { key: 'k-ou' });
    const again = first.catch(() => tool.invoke({}, { key: 'k-ou' }));

    // Assess
    await expect(first).rejects.toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    await expect(again).rejects.toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expect(sends).toBe(1);
    expect(await rowOf(ledger.schema, 'k-ou')).toMatchObject({ status: 'unknown' });
  });

  it('records a step that threw as failed, so the retry of a retryable failure runs it again', async () => {
    // Prepare
    const ledger = await backend.open();
    let tries = 0;
    const tool = ledger.tool({
      name: 'flaky',
      kind: 'mutation',
      handler: async (_: unknown, ctx) =>
        ctx.step('call', () => {
          tries++;
          if (tries === 1) throw new Error('connection refused');
          return 'ok';
        }),
    });

    // Act
    const first = tool.invoke({}, { key: 'k-f' });
    await first.catch(() => undefined);
    const second = await tool.invoke({}, { key: 'k-f' });

    // Assess
    await expect(first).rejects.toThrow('connection refused');
    expect(second).toMatchObject({ outcome: 'executed', value: 'ok', attempt: 2 });
    expect(tries).toBe(2);
  });

  it.each([
    ['its result is kept', 'returns', { sent: 1 }, 1],
    ['it runs again when it threw its own error', 'throws', { sent: 2 }, 2],
  ] as const)(
    'a retry from the same process waits for the step its earlier attempt is still running: %s',
    async (_what, firstStep, value, runs) => {
      // Prepare: attempt 1 is inside its e-mail step when its lease lapses (a dead network stops its renewals;
      // here the row is aged by hand), and a retry from the same ledger takes the run over.
      const ledger = await backend.open();
      const inside = gate();
      let ran = 0;
      const tool = ledger.tool({
        name: 'mail',
        kind: 'mutation',
        handler: async (_input, ctx) =>
          ctx.step('email', async () => {
            const run = ++ran;
            if (run === 1) {
              await inside.promise;
              if (firstStep === 'throws') throw new Error('smtp refused');
            }
            return { sent: run };
          }),
      });
      const first = tool.invoke({ to: 'a' }, { key: 'k-same' }).catch((error: unknown) => error);
      await expect.poll(() => ran, { timeout: 10_000 }).toBe(1);
      await crash(ledger.schema, 'k-same');

      // Act: the retry finds the step started by attempt 1, which this process is still running.
      const retry = tool.invoke({ to: 'a' }, { key: 'k-same' });
      await expect
        .poll(async () => (await rowOf(ledger.schema, 'k-same'))?.attempt, { timeout: 10_000 })
        .toBe(2);
      inside.open();

      // Assess: not OUTCOME_UNKNOWN: the process knew how its step ended.
      expect(await retry).toMatchObject({ outcome: 'executed', attempt: 2, value });
      expect(ran).toBe(runs);
      expect(await rowOf(ledger.schema, 'k-same')).toMatchObject({ status: 'succeeded' });
      expect(await first).toBeInstanceOf(Error);
    },
  );

  it('refuses a bad step name or rule with CONFIG_INVALID before any effect', async () => {
    // Prepare
    const ledger = await backend.open();
    let ran = 0;
    const tool = ledger.tool({
      name: 'bad_step',
      kind: 'mutation',
      isFinalError: () => true,
      handler: async (raw: unknown, ctx) => {
        const input = raw as { name: string; rule?: unknown };
        return ctx.step(input.name, () => ++ran, { onUnknown: input.rule as never });
      },
    });

    // Act / Assess
    await expect(tool.call({ name: '' }, { key: 'k-b1' })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(tool.call({ name: 'x', rule: 'maybe' }, { key: 'k-b2' })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
    expect(ran).toBe(0);
  });
});

describe("the tool's onUnknown rule (a handler without steps)", () => {
  async function interrupted(onUnknown: never) {
    const a = await backend.open();
    const b = await backend.open({ schema: a.schema });
    const held = gate();
    let runs = 0;
    const definition = {
      name: 'notify',
      kind: 'mutation' as const,
      onUnknown,
      handler: async () => {
        runs++;
        if (runs === 1) await held.promise;
        return { run: runs };
      },
    };
    const stuck = a.tool(definition).invoke({}, { key: 'k-tool' });
    await expect.poll(() => runs, { timeout: 10_000 }).toBe(1);
    await crash(a.schema, 'k-tool');
    const retried = b.tool(definition).invoke({}, { key: 'k-tool' });
    await retried.catch(() => undefined);
    held.open();
    await stuck.catch(() => undefined);
    return { retried, runs: () => runs, schema: a.schema };
  }

  it("reruns by default ('rerun')", async () => {
    const { retried, runs } = await interrupted(undefined as never);
    await expect(retried).resolves.toMatchObject({ outcome: 'executed', value: { run: 2 } });
    expect(runs()).toBe(2);
  });

  it("with 'fail', ends with OUTCOME_UNKNOWN and marks the row unknown, without running the handler", async () => {
    const { retried, runs, schema } = await interrupted('fail' as never);
    await expect(retried).rejects.toMatchObject({ code: 'OUTCOME_UNKNOWN', retryable: false });
    expect(runs()).toBe(1);
    expect(await rowOf(schema, 'k-tool')).toMatchObject({ status: 'unknown' });
  });

  it('with a lookup that finds the result, saves and returns it as a replay', async () => {
    const { retried, runs } = await interrupted((async () => ({ run: 'found' })) as never);
    await expect(retried).resolves.toMatchObject({ outcome: 'replayed', value: { run: 'found' } });
    expect(runs()).toBe(1);
  });
});

describe('steps in a transactional tool', () => {
  const pglite = pgliteBackend();
  it('record outside the transaction on Postgres, so a rolled-back handler keeps its finished steps', async () => {
    // Prepare
    const ledger = await backend.open();
    let charges = 0;
    let tries = 0;
    const tool = ledger.tool({
      name: 'tx_pay',
      kind: 'mutation',
      transactional: true,
      handler: async (_: unknown, ctx) => {
        const charge = await ctx.step('charge', () => ({ n: ++charges }), { onUnknown: 'rerun' });
        if (++tries === 1) throw new Error('the write after the charge failed');
        return charge;
      },
    });

    // Act
    await tool.call({}, { key: 'k-tx' }).catch(() => undefined);
    const second = await tool.invoke({}, { key: 'k-tx' });

    // Assess
    expect(second).toMatchObject({ outcome: 'executed', attempt: 2, value: { n: 1 } });
    expect(charges).toBe(1);
  });

  it('are refused with CONFIG_INVALID on PGlite, whose one connection the transaction holds', async () => {
    const ledger = await pglite.open();
    const tool = ledger.tool({
      name: 'tx_pglite',
      kind: 'mutation',
      transactional: true,
      handler: async (_: unknown, ctx) => ctx.step('s', () => 1),
    });
    await expect(tool.call({}, { key: 'k' })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
      message: expect.stringMatching(/Use Postgres/),
    });
  });
});
