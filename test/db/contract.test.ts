import { setTimeout as sleep } from 'node:timers/promises';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Ledger, ToolFailure } from '../../src/index.js';
import { layouts } from '../support/db.js';
import { rejection } from '../support/rejection.js';

const invoiceInput = z.object({ customer: z.string(), amountCents: z.number().int().positive() });

// The partitioned layout (docs/operations.md, "Partitioned layout") keeps the same contract: `layouts` holds it.

describe.each(layouts)('ledger contract on %s', (name, makeBackend) => {
  const backend = makeBackend();
  const partitioned = name.includes('partitioned');
  // Partitions as narrow as the purge tests' TTL, so theirs end within the test.
  const oneSecondPartitions = partitioned ? { partitionWidthSeconds: 1 } : {};

  /** Purges until `expected` rows went, a second apart (at most 5 tries): a partition goes once its range ended. */
  async function purgeAll(ledger: Ledger, expected: number, onProgress?: (n: number) => void) {
    let total = 0;
    for (let i = 0; i < 5 && total < expected; i++) {
      if (i > 0) await sleep(1000);
      total += await ledger.purgeExpired({ onProgress: (n) => onProgress?.(total + n) });
    }
    return total;
  }

  async function invoiceSetup(options: Parameters<typeof backend.open>[0] = {}) {
    const ledger = await backend.open(options);
    const executions: unknown[] = [];
    const tool = ledger.tool({
      name: 'create_invoice',
      kind: 'mutation',
      input: invoiceInput,
      handler: async (input) => {
        executions.push(input);
        return { invoiceId: `inv_${executions.length}`, ...input };
      },
    });
    const rows = (key: string) =>
      backend.sql<Record<string, unknown>>(
        `SELECT * FROM "${ledger.schema}".tool_runs WHERE idempotency_key = $1`,
        [key],
      );
    return { ledger, tool, executions, rows };
  }

  it('executes a first valid key once and persists its result', async () => {
    const { tool, executions, rows } = await invoiceSetup();
    const report = await tool.invoke(
      { customer: 'c_1', amountCents: 4500 },
      { key: 'k-first', tenant: 'acme' },
    );
    expect(report).toMatchObject({ outcome: 'executed', attempt: 1, tenant: 'acme', waitedMs: 0 });
    expect(report.value).toEqual({ invoiceId: 'inv_1', customer: 'c_1', amountCents: 4500 });
    expect(report.paramsHash).toMatch(/^[0-9a-f]{64}$/);
    expect(executions).toHaveLength(1);
    const [row] = await rows('k-first');
    expect(row).toMatchObject({
      status: 'succeeded',
      attempt: 1,
      tenant_id: 'acme',
      tool_name: 'create_invoice',
    });
    expect(row?.result_json).toEqual(report.value);
    expect(row?.parameter_hash).toBe(report.paramsHash);
  });

  it('returns the original result for the same key and parameters, in any key order', async () => {
    const { tool, executions } = await invoiceSetup();
    const first = await tool.invoke({ customer: 'c_1', amountCents: 10 }, { key: 'k-replay' });
    const again = await tool.invoke({ amountCents: 10, customer: 'c_1' }, { key: 'k-replay' });
    expect(again.outcome).toBe('replayed');
    expect(again.value).toEqual(first.value);
    expect(again.attempt).toBe(1);
    expect(again.completedAt?.getTime()).toBe(first.completedAt?.getTime());
    expect(await tool.call({ customer: 'c_1', amountCents: 10 }, { key: 'k-replay' })).toEqual(first.value);
    expect(executions).toHaveLength(1);
  });

  it('rejects the same key with different parameters as KEY_REUSED and keeps the original', async () => {
    const { tool, executions, rows } = await invoiceSetup();
    const first = await tool.call({ customer: 'c_1', amountCents: 10 }, { key: 'k-conflict' });
    const error = await rejection(tool.call({ customer: 'c_1', amountCents: 11 }, { key: 'k-conflict' }));
    expect(error).toMatchObject({ code: 'KEY_REUSED', retryable: false, conflictReason: 'params_mismatch' });
    expect(error.message).toMatch(/new key/);
    expect(executions).toHaveLength(1);
    const [row] = await rows('k-conflict');
    expect(row).toMatchObject({ status: 'succeeded', conflict_count: 1 });
    expect(row?.result_json).toEqual(first);
  });

  it('rejects a key reused by another user of the tenant', async () => {
    const { tool } = await invoiceSetup();
    await tool.call({ customer: 'c_1', amountCents: 10 }, { key: 'k-user', tenant: 't', user: 'alice' });
    const error = await rejection(
      tool.call({ customer: 'c_1', amountCents: 10 }, { key: 'k-user', tenant: 't', user: 'mallory' }),
    );
    expect(error).toMatchObject({ code: 'KEY_REUSED', conflictReason: 'user_mismatch' });
  });

  it('saves nothing when validation fails', async () => {
    const { tool, executions, rows } = await invoiceSetup();
    const error = await rejection(
      tool.call({ customer: 'c_1', amountCents: -5 } as never, { key: 'k-invalid' }),
    );
    expect(error.code).toBe('INPUT_INVALID');
    expect(error.issues?.[0]?.path).toEqual(['amountCents']);
    expect(executions).toHaveLength(0);
    expect(await rows('k-invalid')).toHaveLength(0);
    // Fixing the input with the same key then executes normally.
    expect((await tool.invoke({ customer: 'c_1', amountCents: 5 }, { key: 'k-invalid' })).outcome).toBe(
      'executed',
    );
  });

  it('takes any Standard Schema validator, and hashes the validated (transformed) input', async () => {
    const ledger = await backend.open();
    let calls = 0;
    const tool = ledger.tool({
      name: 'send_email',
      kind: 'mutation',
      input: v.object({ to: v.pipe(v.string(), v.trim(), v.toLowerCase(), v.email()), subject: v.string() }),
      handler: (input) => {
        calls++;
        return { sentTo: input.to };
      },
    });
    expect(await tool.call({ to: 'A@Example.com', subject: 'hi' }, { key: 'k-valibot' })).toEqual({
      sentTo: 'a@example.com',
    });
    // The same intent written differently normalizes to the same validated input: a replay, not a conflict.
    expect((await tool.invoke({ to: ' a@example.COM ', subject: 'hi' }, { key: 'k-valibot' })).outcome).toBe(
      'replayed',
    );
    const error = await rejection(tool.call({ to: 'not-an-email', subject: 'hi' }, { key: 'k-valibot-2' }));
    expect(error.code).toBe('INPUT_INVALID');
    expect(error.issues?.[0]?.path).toEqual(['to']);
    expect(calls).toBe(1);
  });

  it('requires a valid key for mutations and jobs, but not for read tools', async () => {
    const { ledger, tool } = await invoiceSetup();
    // @ts-expect-error: the types require a key for mutations; JavaScript callers can still omit it
    expect((await rejection(tool.call({ customer: 'c', amountCents: 1 }))).code).toBe('KEY_REQUIRED');
    expect((await rejection(tool.call({ customer: 'c', amountCents: 1 }, { key: '' }))).code).toBe(
      'KEY_INVALID',
    );
    expect(
      (await rejection(tool.call({ customer: 'c', amountCents: 1 }, { key: 'x'.repeat(256) }))).code,
    ).toBe('KEY_INVALID');
    expect((await rejection(tool.call({ customer: 'c', amountCents: 1 }, { key: 'a\nb' }))).code).toBe(
      'KEY_INVALID',
    );
    let reads = 0;
    const read = ledger.tool({ name: 'get_invoice', kind: 'read', handler: () => ({ reads: ++reads }) });
    expect(await read.call({})).toEqual({ reads: 1 });
    expect((await read.invoke({})).outcome).toBe('executed');
    const [{ count }] = (await backend.sql<{ count: string }>(
      `SELECT count(*)::text AS count FROM "${ledger.schema}".tool_runs WHERE tool_name = 'get_invoice'`,
    )) as [{ count: string }];
    expect(count).toBe('0');
  });

  it('keeps tenants apart and stores hostile strings verbatim', async () => {
    const { tool, executions, rows } = await invoiceSetup();
    const hostileKey = `'; DROP TABLE tool_runs; -- "\\ ☃ 𝄞`;
    const a = await tool.invoke({ customer: 'c', amountCents: 1 }, { key: hostileKey, tenant: "t'a" });
    const b = await tool.invoke({ customer: 'c', amountCents: 1 }, { key: hostileKey, tenant: 't"b' });
    expect(a.outcome).toBe('executed');
    expect(b.outcome).toBe('executed');
    expect(b.value).not.toEqual(a.value);
    // Different parameters in another tenant are not a conflict: the key space is per tenant.
    expect(
      (await tool.invoke({ customer: 'z', amountCents: 9 }, { key: hostileKey, tenant: 'other' })).outcome,
    ).toBe('executed');
    expect(executions).toHaveLength(3);
    const stored = await rows(hostileKey);
    expect(stored.map((r) => r.tenant_id).sort()).toEqual(["t'a", 't"b', 'other'].sort());
  });

  it('leaves the key retryable after a failure and executes again with attempt + 1', async () => {
    const ledger = await backend.open();
    let calls = 0;
    const tool = ledger.tool({
      name: 'send_email',
      kind: 'mutation',
      handler: async () => {
        calls++;
        if (calls === 1) throw new Error('SMTP timeout');
        return { sent: true };
      },
    });
    await expect(tool.call({ to: 'x' }, { key: 'k-retry' })).rejects.toThrow('SMTP timeout');
    const report = await tool.invoke({ to: 'x' }, { key: 'k-retry' });
    expect(report).toMatchObject({ outcome: 'executed', attempt: 2, value: { sent: true } });
    expect((await tool.invoke({ to: 'x' }, { key: 'k-retry' })).outcome).toBe('replayed');
    expect(calls).toBe(2);
  });

  // The executor classifies a handler's answer without awaiting it when it is not a promise (run-handler.ts): every
  // shape a handler can answer in must end as `await` would have ended it.
  it('ends a call alike whether the handler returns a value, a promise or a thenable, or throws before or after', async () => {
    const ledger = await backend.open();
    const answers = {
      value: () => ({ shape: 'value', at: new Date(0) }),
      promise: async () => ({ shape: 'promise' }),
      thenable: () => ({
        // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a Promise, as some clients return
        then: (resolve: (v: unknown) => void) => resolve({ shape: 'thenable' }),
      }),
      throws: () => {
        throw new Error('threw at once');
      },
      rejects: async () => {
        throw new Error('rejected later');
      },
      thenGetterThrows: () =>
        Object.defineProperty({}, 'then', {
          get() {
            throw new Error('then getter threw');
          },
        }),
      notJson: () => ({ amount: 10n }),
    } as const;
    const runs: Record<string, number> = {};
    const toolOf = (shape: keyof typeof answers) =>
      ledger.tool({
        name: `answers_${shape}`,
        kind: 'mutation',
        handler: () => {
          runs[shape] = (runs[shape] ?? 0) + 1;
          return answers[shape]() as never;
        },
      });
    for (const shape of ['value', 'promise', 'thenable'] as const) {
      const tool = toolOf(shape);
      const first = await tool.invoke({}, { key: `k-${shape}` });
      const replay = await tool.invoke({}, { key: `k-${shape}` });
      expect(first.outcome).toBe('executed');
      expect(replay.outcome).toBe('replayed');
      expect(first.value).toEqual(replay.value);
      expect(first.value).not.toBe(replay.value);
      expect(runs[shape]).toBe(1);
      // The JSON form, not the handler's object: the Date is its string, as a replay gives it.
      if (shape === 'value') expect(first.value).toEqual({ shape: 'value', at: new Date(0).toISOString() });
    }
    for (const [shape, message] of [
      ['throws', 'threw at once'],
      ['rejects', 'rejected later'],
      ['thenGetterThrows', 'then getter threw'],
    ] as const) {
      const tool = toolOf(shape);
      await expect(tool.call({}, { key: `k-${shape}` })).rejects.toThrow(message);
      // A thrown error leaves the key retryable: the next call runs the handler again.
      await expect(tool.call({}, { key: `k-${shape}` })).rejects.toThrow(message);
      expect(runs[shape]).toBe(2);
    }
    const notJson = await rejection(toolOf('notJson').call({}, { key: 'k-not-json' }));
    expect(notJson).toMatchObject({ code: 'RESULT_INVALID' });
  });

  it('refuses a call on a closed ledger as a rejected promise, never a synchronous throw', async () => {
    const ledger = await backend.open();
    const tool = ledger.tool({ name: 'after_close', kind: 'mutation', handler: () => ({ ok: true }) });
    await ledger.close();
    let pending: Promise<unknown> | undefined;
    expect(() => {
      pending = tool.call({}, { key: 'k-closed' });
    }).not.toThrow();
    await expect(pending).rejects.toMatchObject({ code: 'LEDGER_CLOSED' });
    await expect(tool.invoke({}, { key: 'k-closed' })).rejects.toMatchObject({ code: 'LEDGER_CLOSED' });
  });

  it('stores a final failure and replays it as the same error', async () => {
    const ledger = await backend.open();
    let calls = 0;
    const tool = ledger.tool({
      name: 'charge_card',
      kind: 'mutation',
      handler: async () => {
        calls++;
        throw new ToolFailure('Card declined', {
          reason: 'card_declined',
          details: { declineCode: 'insufficient_funds' },
        });
      },
    });
    const first = await rejection(tool.call({ amount: 5 }, { key: 'k-final' }));
    const replay = await rejection(tool.call({ amount: 5 }, { key: 'k-final' }));
    for (const error of [first, replay]) {
      expect(error).toBeInstanceOf(ToolFailure);
      expect(error).toMatchObject({
        code: 'TOOL_FAILED',
        message: 'Card declined',
        reason: 'card_declined',
        details: { declineCode: 'insufficient_funds' },
        final: true,
        retryable: false,
      });
    }
    expect((replay as ToolFailure).replayed).toBe(true);
    expect(calls).toBe(1);
  });

  it('treats rows past their TTL as absent, and purges them in batches', async () => {
    const ledger = await backend.open({ ttlSeconds: 1, ...oneSecondPartitions });
    let calls = 0;
    const tool = ledger.tool({ name: 'ping', kind: 'mutation', handler: () => ++calls });
    // The TTL counts from the claim: replay right after the call, well within it even on a loaded machine.
    await tool.call({}, { key: 'a' });
    expect((await tool.invoke({}, { key: 'a' })).outcome).toBe('replayed');
    for (const key of ['b', 'c']) await tool.call({}, { key });
    await sleep(1100);
    const after = await tool.invoke({}, { key: 'a' });
    expect(after).toMatchObject({ outcome: 'executed', attempt: 1 });
    expect(calls).toBe(4);
    await sleep(1100);
    const progress: number[] = [];
    if (partitioned) {
      // Whole partitions go once their range has ended, up to one width after the rows expired.
      expect(await purgeAll(ledger, 3, (n) => progress.push(n))).toBe(3);
      expect(progress.at(-1)).toBe(3);
      return;
    }
    expect(await ledger.purgeExpired({ batchSize: 2, onProgress: (n) => progress.push(n) })).toBe(3);
    expect(progress).toEqual([2, 3]);
  });

  it('caps the purge rate when asked, still deleting every expired row, and refuses a cap that is not a rate', async () => {
    const ledger = await backend.open({ ttlSeconds: 1, ...oneSecondPartitions });
    const tool = ledger.tool({ name: 'ping', kind: 'mutation', handler: () => 1 });
    for (const key of ['a', 'b', 'c', 'd', 'e']) await tool.call({}, { key });
    await sleep(1100);
    if (partitioned) expect(await purgeAll(ledger, 5)).toBe(5);
    else expect(await ledger.purgeExpired({ batchSize: 2, maxRowsPerSecond: 50 })).toBe(5);
    for (const bad of [0, -1, Number.NaN, '10' as unknown as number]) {
      await expect(ledger.purgeExpired({ maxRowsPerSecond: bad })).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
      });
    }
    expect(await ledger.purgeExpired({ maxRowsPerSecond: Number.POSITIVE_INFINITY })).toBe(0);
  });

  it('counts the TTL from the claim, and keeps a result that outlasted it ttlSeconds after its completion', async () => {
    const ledger = await backend.open({ ttlSeconds: 1 });
    const tool = ledger.tool({
      name: 'slow',
      kind: 'mutation',
      input: z.object({ ms: z.number() }),
      handler: async ({ ms }) => {
        await sleep(ms);
        return ms;
      },
    });
    await tool.call({ ms: 0 }, { key: 'fast' });
    await tool.call({ ms: 1200 }, { key: 'slow' });
    // The slow run's claim is past its TTL, yet its result is fresh: a retry right away replays it.
    expect((await tool.invoke({ ms: 1200 }, { key: 'slow' })).outcome).toBe('replayed');
    const rows = await backend.sql<{ idempotency_key: string; from_claim: number; from_completion: number }>(
      `SELECT idempotency_key, extract(epoch FROM expires_at - started_at)::float8 AS from_claim,
         extract(epoch FROM expires_at - completed_at)::float8 AS from_completion
       FROM "${ledger.schema}".tool_runs ORDER BY idempotency_key`,
    );
    expect(rows.map((r) => r.idempotency_key)).toEqual(['fast', 'slow']);
    expect(rows[0]?.from_claim).toBeCloseTo(1, 6);
    expect(rows[1]?.from_completion).toBeCloseTo(1, 6);
  });

  it('returns the same job on retry and its final status once done', async () => {
    const ledger = await backend.open();
    let started = 0;
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const job = ledger.tool({
      name: 'start_export',
      kind: 'job',
      handler: async () => {
        started++;
        await gate;
        return { file: 'export.csv' };
      },
    });
    const first = await job.call({ table: 'invoices' }, { key: 'k-job' });
    expect(first).toMatchObject({ status: 'running', attempt: 1 });
    expect(first.jobId).toMatch(/^job_/);
    const retry = await job.invoke({ table: 'invoices' }, { key: 'k-job' });
    // A status poll of a running job is not a replay: replay metrics must not count polls.
    expect(retry.outcome).toBe('polled');
    expect(retry.value).toMatchObject({ jobId: first.jobId, status: 'running' });
    finish();
    await expect
      .poll(async () => (await job.call({ table: 'invoices' }, { key: 'k-job' })).status)
      .toBe('succeeded');
    expect(await job.call({ table: 'invoices' }, { key: 'k-job' })).toEqual({
      jobId: first.jobId,
      status: 'succeeded',
      attempt: 1,
      result: { file: 'export.csv' },
    });
    expect(await job.getJob(first.jobId)).toMatchObject({ status: 'succeeded' });
    expect(await job.getJob(first.jobId, { tenant: 'someone-else' })).toBeUndefined();
    expect(started).toBe(1);
  });

  it('commits transactional writes with the completion, and rolls both back on failure', async () => {
    const ledger = await backend.open();
    await backend.sql(`CREATE TABLE "${ledger.schema}".invoices (id text PRIMARY KEY)`);
    const tool = ledger.tool({
      name: 'book_invoice',
      kind: 'mutation',
      transactional: true,
      handler: async (input: unknown, ctx) => {
        const { id, fail } = input as { id: string; fail?: boolean };
        await ctx.db!.query(`INSERT INTO "${ledger.schema}".invoices (id) VALUES ($1)`, [id]);
        if (fail) throw new Error('downstream refused');
        return { id };
      },
    });
    await expect(tool.call({ id: 'inv_a', fail: true }, { key: 'k-tx-fail' })).rejects.toThrow(
      'downstream refused',
    );
    expect(await backend.sql(`SELECT id FROM "${ledger.schema}".invoices`)).toEqual([]);
    const [failed] = await backend.sql(
      `SELECT status FROM "${ledger.schema}".tool_runs WHERE idempotency_key = 'k-tx-fail'`,
    );
    expect(failed).toEqual({ status: 'failed' });

    expect(await tool.call({ id: 'inv_b' }, { key: 'k-tx-ok' })).toEqual({ id: 'inv_b' });
    expect(await backend.sql(`SELECT id FROM "${ledger.schema}".invoices`)).toEqual([{ id: 'inv_b' }]);
    expect((await tool.invoke({ id: 'inv_b' }, { key: 'k-tx-ok' })).outcome).toBe('replayed');
  });

  it('waits for a parallel first execution, or rejects with IN_PROGRESS past waitSeconds', async () => {
    const ledger = await backend.open({ waitSeconds: 5 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const slow = ledger.tool({
      name: 'slow',
      kind: 'mutation',
      handler: async () => {
        calls++;
        await gate;
        return { done: true };
      },
    });
    // The same tool seen from a second process (one ledger refuses a name registered twice).
    const elsewhere = await backend.open({ schema: ledger.schema, waitSeconds: 5 });
    const impatient = elsewhere.tool({
      name: 'slow',
      kind: 'mutation',
      waitSeconds: 0,
      handler: () => ({ never: true }),
    });
    const first = slow.invoke({}, { key: 'k-wait' });
    await expect.poll(() => calls).toBe(1);
    const error = await rejection(impatient.call({}, { key: 'k-wait' }));
    expect(error).toMatchObject({ code: 'IN_PROGRESS', retryable: true });
    expect(error.retryAfterMs).toBeGreaterThan(0);
    const waiter = slow.invoke({}, { key: 'k-wait' });
    await sleep(150);
    release();
    const [a, b] = await Promise.all([first, waiter]);
    expect(a.outcome).toBe('executed');
    expect(b).toMatchObject({ outcome: 'replayed', value: { done: true } });
    expect(b.waitedMs).toBeGreaterThan(0);
    expect(calls).toBe(1);
  });

  it('serializes parallel duplicates in one process through the database', async () => {
    const { tool, executions } = await invoiceSetup();
    const reports = await Promise.all(
      Array.from({ length: 25 }, () => tool.invoke({ customer: 'c', amountCents: 1 }, { key: 'k-parallel' })),
    );
    expect(executions).toHaveLength(1);
    expect(reports.filter((r) => r.outcome === 'executed')).toHaveLength(1);
    expect(new Set(reports.map((r) => JSON.stringify(r.value))).size).toBe(1);
  });

  it('takes over a lapsed lease with a higher attempt and refuses the stale owner', async () => {
    const ledger = await backend.open();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const tool = ledger.tool({
      name: 'deploy',
      kind: 'mutation',
      handler: async () => {
        const mine = ++calls;
        if (mine === 1) await gate;
        return { by: mine };
      },
    });
    const stale = tool.invoke({ service: 'api' }, { key: 'k-lease' });
    await expect.poll(() => calls).toBe(1);
    // The first owner stalls past its lease (as if its process froze).
    await backend.sql(
      `UPDATE "${ledger.schema}".tool_runs SET lease_expires_at = now() - interval '1 second' WHERE idempotency_key = 'k-lease'`,
    );
    const takeover = await tool.invoke({ service: 'api' }, { key: 'k-lease' });
    expect(takeover).toMatchObject({ outcome: 'executed', attempt: 2, value: { by: 2 } });
    release();
    const staleError = await rejection(stale);
    expect(staleError).toMatchObject({ code: 'LEASE_LOST', retryable: true });
    const replay = await tool.invoke({ service: 'api' }, { key: 'k-lease' });
    expect(replay).toMatchObject({ outcome: 'replayed', attempt: 2, value: { by: 2 } });
  });

  it("aborts the handler's signal when its lease is taken over, and when the ledger closes", async () => {
    const ledger = await backend.open({ leaseSeconds: 0.3 });
    const reasons: unknown[] = [];
    const waitForAbort = (signal: AbortSignal) =>
      new Promise((resolve) => signal.addEventListener('abort', () => resolve(reasons.push(signal.reason))));
    const tool = ledger.tool({
      name: 'long_task',
      kind: 'mutation',
      handler: async (_input: unknown, ctx) => {
        await waitForAbort(ctx.signal);
        return 'stopped';
      },
    });
    const taken = tool.invoke({}, { key: 'k-signal' });
    await expect
      .poll(async () => (await backend.sql(`SELECT 1 FROM "${ledger.schema}".tool_runs`)).length)
      .toBe(1);
    // Another owner takes the key (as a takeover would); the next renewal notices and aborts the handler.
    await backend.sql(`UPDATE "${ledger.schema}".tool_runs SET attempt = attempt + 1, lease_owner = 'other'`);
    expect((await rejection(taken)).code).toBe('LEASE_LOST');
    expect(reasons[0]).toMatchObject({ code: 'LEASE_LOST' });

    const running = tool.invoke({}, { key: 'k-signal-close' }).catch((e: unknown) => e);
    await expect
      .poll(async () => (await backend.sql(`SELECT 1 FROM "${ledger.schema}".tool_runs`)).length)
      .toBe(2);
    await ledger.close({ timeoutSeconds: 0.1 });
    await running;
    expect(reasons[1]).toMatchObject({ code: 'LEDGER_CLOSED' });
  });

  it('keeps the leases of handlers that outlast them alive, several at once and of different lengths', async () => {
    // Prepare: one timer per ledger renews every running lease; each handler runs for four of its leases.
    const ledger = await backend.open({ waitSeconds: 0 });
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const slow = (name: string, leaseSeconds: number) => ({
      leaseSeconds,
      tool: ledger.tool({
        name,
        kind: 'mutation',
        leaseSeconds,
        handler: async () => {
          await sleep(leaseSeconds * 4000);
          return name;
        },
      }),
    });
    const slows = [slow('slow_a', 0.3), slow('slow_b', 0.3), slow('slow_c', 0.6)];

    // Act: two leases in, a duplicate of each would take over a lapsed lease.
    const outcomes = await Promise.all(
      slows.map(async ({ tool, leaseSeconds }) => {
        const first = tool.invoke({}, { key: 'k-outlast' });
        await sleep(leaseSeconds * 2000);
        const duplicate = await rejection(tool.invoke({}, { key: 'k-outlast' }));
        return { duplicate: duplicate.code, first: await first };
      }),
    );

    // Assess: no takeover (the duplicates find the run in progress) and each first call completes its own attempt.
    expect(
      outcomes.map(({ duplicate, first }) => [duplicate, first.outcome, first.attempt, first.value]),
    ).toEqual([
      ['IN_PROGRESS', 'executed', 1, 'slow_a'],
      ['IN_PROGRESS', 'executed', 1, 'slow_b'],
      ['IN_PROGRESS', 'executed', 1, 'slow_c'],
    ]);
  });

  it('leaves volatile fields out of the parameter hash', async () => {
    const ledger = await backend.open();
    let calls = 0;
    const tool = ledger.tool({
      name: 'notify',
      kind: 'mutation',
      volatileFields: ['requestedAt', 'meta.traceparent'],
      handler: () => ++calls,
    });
    await tool.call({ to: 'u1', requestedAt: 1, meta: { traceparent: 'a', region: 'eu' } }, { key: 'k-vol' });
    const again = await tool.invoke(
      { to: 'u1', requestedAt: 2, meta: { traceparent: 'b', region: 'eu' } },
      { key: 'k-vol' },
    );
    expect(again.outcome).toBe('replayed');
    const changed = await rejection(
      tool.call({ to: 'u1', requestedAt: 2, meta: { traceparent: 'b', region: 'us' } }, { key: 'k-vol' }),
    );
    expect(changed.code).toBe('KEY_REUSED');
  });

  it('refuses non-JSON inputs without saving, and non-JSON results with a documented error', async () => {
    const ledger = await backend.open();
    let calls = 0;
    const tool = ledger.tool({
      name: 'weird',
      kind: 'mutation',
      handler: (input: unknown) => {
        calls++;
        return (input as { result: unknown }).result;
      },
    });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    for (const bad of [{ n: 10n }, { f: () => 1 }, circular, { x: Number.NaN }]) {
      expect((await rejection(tool.call(bad, { key: 'k-bad-input' }))).code).toBe('INPUT_INVALID');
    }
    expect(calls).toBe(0);
    const rows = () => backend.sql(`SELECT status, final, error_json FROM "${ledger.schema}".tool_runs`);
    expect(await rows()).toEqual([]);

    const weirdResult = ledger.tool({
      name: 'weird_result',
      kind: 'mutation',
      handler: () => ({ big: 10n }),
    });
    const error = await rejection(weirdResult.call({}, { key: 'k-bad-result' }));
    expect(error).toMatchObject({ code: 'RESULT_INVALID', retryable: false });
    const [row] = await rows();
    expect(row).toMatchObject({ status: 'failed', final: true });
    // The side effect ran once; a retry must not repeat it, and says why.
    const replay = await rejection(weirdResult.call({}, { key: 'k-bad-result' }));
    expect(replay.message).toMatch(/cannot be stored as JSON/);
  });
});

describe.each(layouts)('jobs after a crash on %s', (_name, makeBackend) => {
  const backend = makeBackend();

  async function crashedJob(resumeAbandoned: boolean) {
    const ledger = await backend.open();
    let runs = 0;
    const job = ledger.tool({
      name: 'rebuild_index',
      kind: 'job',
      resumeAbandoned,
      handler: async () => {
        runs++;
        if (runs === 1) await new Promise(() => {}); // the first worker never finishes: its process "died"
        return { rebuilt: true };
      },
    });
    const first = await job.call({}, { key: 'k-crash' });
    await expect.poll(() => runs).toBe(1);
    await backend.sql(
      `UPDATE "${ledger.schema}".tool_runs SET lease_expires_at = now() - interval '1 second' WHERE job_id = $1`,
      [first.jobId],
    );
    return { job, first, runs: () => runs };
  }

  it('resumes an abandoned job under the same job id', async () => {
    const { job, first, runs } = await crashedJob(true);
    const resumed = await job.call({}, { key: 'k-crash' });
    expect(resumed).toMatchObject({ jobId: first.jobId, status: 'running', attempt: 2 });
    await expect.poll(async () => (await job.getJob(first.jobId))?.status).toBe('succeeded');
    expect(runs()).toBe(2);
  });

  it('reports an abandoned job instead of running forever when resuming is off', async () => {
    const { job, first, runs } = await crashedJob(false);
    expect(await job.call({}, { key: 'k-crash' })).toMatchObject({
      jobId: first.jobId,
      status: 'abandoned',
      attempt: 1,
    });
    expect(await job.getJob(first.jobId)).toMatchObject({ status: 'abandoned' });
    expect(runs()).toBe(1);
  });
});
