import { setTimeout as sleep } from 'node:timers/promises';
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { hashKey } from '../../../src/telemetry/key-hash.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { backends } from '../../support/db.js';
import { rejection } from '../../support/rejection.js';
import { useGlobalHarness } from '../../support/telemetry-harness.js';

// The approval outcomes (approval_required, approved, declined, expired) on spans, logs and metrics, with the key
// hashed as any key that looks like personal data, and the gauges of calls awaiting a decision, read from a real
// ledger by the SDK's in-memory reader.

const SECRET = 'test-key-hash-secret';
const refund = z.object({ order: z.string(), cents: z.number().int().positive() });
const args = { order: 'o_1', cents: 500 };

describe.each(backends)('approval telemetry (%s)', (_name, makeBackend) => {
  const backend = makeBackend();
  const harness = useGlobalHarness();

  async function setup(options: Parameters<typeof backend.open>[0] = {}) {
    const ledger = await backend.open({
      waitSeconds: 0,
      telemetry: { keyHashSecret: SECRET, metricTenants: ['acme'] },
      ...options,
    });
    const tool = ledger.tool({
      name: 'refund',
      kind: 'mutation',
      input: refund,
      approval: 'required',
      handler: async (input) => ({ refunded: input.cents }),
    });
    return { ledger, tool };
  }

  const callSpans = (): ReadableSpan[] =>
    harness()
      .finishedSpans()
      .filter((s) => s.name.startsWith('execute_tool '));

  /** Every exported span and log record as text, to look for a raw key anywhere in them. */
  const everything = () =>
    JSON.stringify([
      callSpans().map((s) => ({
        name: s.name,
        attributes: s.attributes,
        events: s.events,
        status: s.status,
      })),
      harness()
        .logRecords()
        .map((r) => ({ body: r.body, attributes: r.attributes })),
    ]);

  it('reports each approval outcome on spans, logs and metrics, the key hashed', async () => {
    // Keys that look like personal data (an e-mail address): hashed under keyMode auto, never raw.
    const key = (name: string) => `refund-${name}-jane.doe@example.com`;
    const ctx = (name: string) => ({ key: key(name), tenant: 'acme', user: 'u_1' });
    const target = (name: string) => ({ tenant: 'acme', tool: 'refund', key: key(name) });
    const { ledger, tool } = await setup({ approvalTtlSeconds: 1 });

    expect((await rejection(tool.invoke(args, ctx('approved')))).code).toBe('APPROVAL_REQUIRED');
    await ledger.approve({ ...target('approved'), by: 'ops@acme' });
    expect((await tool.invoke(args, ctx('approved'))).outcome).toBe('approved');
    await rejection(tool.invoke(args, ctx('declined')));
    await ledger.decline({ ...target('declined'), by: 'ops@acme', reason: 'duplicate refund' });
    expect((await rejection(tool.invoke(args, ctx('declined')))).code).toBe('APPROVAL_DECLINED');
    await rejection(tool.invoke(args, ctx('expired')));
    await sleep(1100);
    expect((await rejection(tool.invoke(args, ctx('expired')))).code).toBe('APPROVAL_EXPIRED');

    // Spans: one per call, its outcome, its error code, the key only as its HMAC.
    const spans = callSpans();
    const outcomes = spans.map((s) => s.attributes[ATTR.OUTCOME]);
    expect(outcomes).toEqual([
      'approval_required',
      'approved',
      'approval_required',
      'declined',
      'approval_required',
      'expired',
    ]);
    const byOutcome = new Map(spans.map((s) => [s.attributes[ATTR.OUTCOME], s]));
    const codes = Object.fromEntries(
      [...byOutcome].map(([outcome, s]) => [String(outcome), s.attributes[ATTR.ERROR_CODE]]),
    );
    expect(codes).toEqual({
      approval_required: 'APPROVAL_REQUIRED',
      approved: undefined,
      declined: 'APPROVAL_DECLINED',
      expired: 'APPROVAL_EXPIRED',
    });
    expect(byOutcome.get('approved')?.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(byOutcome.get('declined')?.status.code).toBe(SpanStatusCode.ERROR);
    expect(byOutcome.get('expired')?.status.code).toBe(SpanStatusCode.ERROR);
    const keys = ['approved', 'approved', 'declined', 'declined', 'expired', 'expired'].map(key);
    spans.forEach((span, i) => {
      expect(span.attributes[ATTR.IDEMPOTENCY_KEY]).toBeUndefined();
      expect(span.attributes[ATTR.IDEMPOTENCY_KEY_HASH]).toBe(hashKey(keys[i]!, SECRET));
      expect(span.attributes[ATTR.TENANT_ID]).toBe('acme');
    });

    // Logs: one decision record per call with its outcome's severity and the same hashed key.
    const records = harness().logRecords();
    expect(records.map((r) => [r.attributes[ATTR.OUTCOME], r.severityText])).toEqual([
      ['approval_required', 'INFO'],
      ['approved', 'INFO'],
      ['approval_required', 'INFO'],
      ['declined', 'WARN'],
      ['approval_required', 'INFO'],
      ['expired', 'WARN'],
    ]);
    records.forEach((record, i) => {
      expect(record.attributes[ATTR.IDEMPOTENCY_KEY]).toBeUndefined();
      expect(record.attributes[ATTR.IDEMPOTENCY_KEY_HASH]).toBe(hashKey(keys[i]!, SECRET));
    });
    // The error messages name the key for the model; what leaves the process does not.
    expect(everything()).not.toContain('jane.doe@example.com');

    // Metrics: the calls counter by outcome, and the handler's run time only for the approved call.
    const calls = await harness().points(METRIC.TOOL_CALLS);
    const counted = Object.fromEntries(
      calls.map((p) => [String(p.attributes[ATTR.OUTCOME]), p.value as number]),
    );
    expect(counted).toEqual({ approval_required: 3, approved: 1, declined: 1, expired: 1 });
    for (const p of calls) expect(p.attributes[ATTR.TENANT_ID]).toBe('acme');
    const durations = await harness().points(METRIC.EXECUTE_TOOL_DURATION);
    expect(durations.map((p) => p.attributes[ATTR.OUTCOME])).toEqual(['approved']);
    await ledger.close();
  });

  it('gauges the calls awaiting a decision: by allow-listed tenant, the rest together, the oldest age', async () => {
    const { ledger, tool } = await setup({ approvalTtlSeconds: 60 });
    const gauges = async () => {
      const read = async (name: string) =>
        Object.fromEntries(
          (await harness().points(name)).map((p) => {
            expect(p.attributes[ATTR.LEDGER_SCHEMA]).toBe(ledger.schema);
            return [String(p.attributes[ATTR.TENANT_ID] ?? 'other'), p.value as number];
          }),
        );
      return {
        waiting: await read(METRIC.APPROVALS_WAITING),
        oldest: await read(METRIC.APPROVALS_OLDEST_AGE),
      };
    };

    // Nothing awaits yet: both series exist at 0, so an alert sees 0 rather than nothing.
    expect(await gauges()).toEqual({ waiting: { acme: 0, other: 0 }, oldest: { acme: 0, other: 0 } });

    await rejection(tool.invoke(args, { key: 'a1', tenant: 'acme' }));
    await rejection(tool.invoke(args, { key: 'a2', tenant: 'acme' }));
    await rejection(tool.invoke(args, { key: 'g1', tenant: 'globex' }));
    await rejection(tool.invoke(args, { key: 'i1', tenant: 'initech' }));
    await sleep(300);
    const waiting = await gauges();
    // globex and initech are not allow-listed: counted together, never named.
    expect(waiting.waiting).toEqual({ acme: 2, other: 2 });
    expect(waiting.oldest.acme).toBeGreaterThanOrEqual(0.25);
    expect(waiting.oldest.acme).toBeLessThan(60);
    expect(waiting.oldest.other).toBeGreaterThanOrEqual(0.25);

    // A decided call no longer waits; the approved one runs and is done.
    await ledger.approve({ tenant: 'acme', tool: 'refund', key: 'a1', by: 'ops@acme' });
    await ledger.decline({ tenant: 'globex', tool: 'refund', key: 'g1', by: 'ops@globex', reason: 'no' });
    await tool.invoke(args, { key: 'a1', tenant: 'acme' });
    expect((await gauges()).waiting).toEqual({ acme: 1, other: 1 });

    // Closed: the ledger's source is gone and nothing reads the closed database; a collection still succeeds.
    await ledger.close();
    await expect(harness().reader.metrics()).resolves.toBeDefined();
  });

  it('a ledger whose tools never ask for approval has no approval gauges', async () => {
    const ledger = await backend.open({ telemetry: { keyHashSecret: SECRET } });
    const tool = ledger.tool({ name: 'send_invoice', kind: 'mutation', handler: () => ({ sent: true }) });
    expect((await tool.invoke({}, { key: 'inv-1', tenant: 'acme' })).outcome).toBe('executed');
    expect(await harness().metric(METRIC.APPROVALS_WAITING)).toBeUndefined();
    expect(await harness().metric(METRIC.APPROVALS_OLDEST_AGE)).toBeUndefined();
    await ledger.close();
  });
});
