import { SpanStatusCode } from '@opentelemetry/api';
import { LoggerProvider } from '@opentelemetry/sdk-logs';
import { BasicTracerProvider, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolFailure } from '../../../src/index.js';
import { hashKey } from '../../../src/telemetry/key-hash.js';
import type { Redactor } from '../../../src/telemetry/options.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { backends } from '../../support/db.js';
import {
  failingSpanExporter,
  throwingSpanProcessor,
  useGlobalHarness,
} from '../../support/telemetry-harness.js';

describe.each(backends)('telemetry of real tool calls (%s)', (_name, makeBackend) => {
  const backend = makeBackend();
  const harness = useGlobalHarness();

  const callSpans = (): ReadableSpan[] =>
    harness()
      .finishedSpans()
      .filter((s) => s.name.startsWith('execute_tool '));

  it("links a replay's span to the original execution's span", async () => {
    // Prepare
    const ledger = await backend.open({ telemetry: { keyHashSecret: 'test-key-hash-secret' } });
    const tool = ledger.tool({
      name: 'send_invoice',
      kind: 'mutation',
      handler: (input: unknown) => ({ sent: input }),
    });

    // Act
    const first = await tool.invoke({ invoice: 'inv_2024_0042' }, { key: 'inv_2024_0042', tenant: 'acme' });
    const replay = await tool.invoke({ invoice: 'inv_2024_0042' }, { key: 'inv_2024_0042', tenant: 'acme' });

    // Assess
    expect([first.outcome, replay.outcome]).toEqual(['executed', 'replayed']);
    const [original, replayed] = callSpans();
    expect(original?.attributes[ATTR.OUTCOME]).toBe('executed');
    expect(replayed?.attributes[ATTR.OUTCOME]).toBe('replayed');
    expect(replayed?.links).toHaveLength(1);
    expect(replayed?.links[0]?.context.traceId).toBe(original?.spanContext().traceId);
    expect(replayed?.links[0]?.context.spanId).toBe(original?.spanContext().spanId);
    expect(replayed?.links[0]?.attributes).toEqual({ [ATTR.LINK_TYPE]: 'original_execution' });
    expect(replay.originalSpan).toEqual({
      traceId: original?.spanContext().traceId,
      spanId: original?.spanContext().spanId,
    });
    expect(original?.attributes[ATTR.PARAMS_HASH]).toBe(hashKey(first.paramsHash!, 'test-key-hash-secret'));
    expect(original?.attributes[ATTR.IDEMPOTENCY_KEY]).toBe('inv_2024_0042');
    const ops = (await harness().points(METRIC.LEDGER_OPERATION_DURATION)).map(
      (p) => p.attributes[ATTR.LEDGER_OPERATION],
    );
    expect(ops).toContain('claim');
    expect(ops).toContain('complete');
  });

  it('reports conflicts, waits that time out, rejections and failures', async () => {
    const ledger = await backend.open({ telemetry: { keyHashSecret: 'test-key-hash-secret' } });
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = ledger.tool({
      name: 'book_flight',
      kind: 'mutation',
      waitSeconds: 0.2,
      input: z.object({ flight: z.string() }),
      handler: async (input) => {
        await gate;
        return { booked: input.flight };
      },
    });
    const failing = ledger.tool({
      name: 'charge_card',
      kind: 'mutation',
      handler: () => {
        throw new ToolFailure('card declined', { reason: 'card_declined' });
      },
    });

    const running = slow.invoke({ flight: 'LH400' }, { key: 'trip-1' });
    await expect(slow.invoke({ flight: 'LH400' }, { key: 'trip-1' })).rejects.toMatchObject({
      code: 'IN_PROGRESS',
    });
    release();
    await running;
    await expect(slow.invoke({ flight: 'UA900' }, { key: 'trip-1' })).rejects.toMatchObject({
      code: 'KEY_REUSED',
    });
    // @ts-expect-error: the types require a key; the call without one is the rejection under test
    await expect(slow.invoke({ flight: 'LH400' })).rejects.toMatchObject({ code: 'KEY_REQUIRED' });
    await expect(slow.invoke({ flight: 42 } as never, { key: 'trip-2' })).rejects.toMatchObject({
      code: 'INPUT_INVALID',
    });
    await expect(failing.invoke({}, { key: 'charge-1' })).rejects.toBeInstanceOf(ToolFailure);

    const byOutcome = new Map(
      callSpans().map((s) => [
        `${s.attributes[ATTR.OUTCOME]}:${s.attributes[ATTR.REJECTED_REASON] ?? ''}`,
        s,
      ]),
    );
    const executed = byOutcome.get('executed:')!;
    const inProgress = byOutcome.get('in_progress:')!;
    const conflict = byOutcome.get('conflict:')!;
    expect(inProgress.status.code).toBe(SpanStatusCode.ERROR);
    expect(inProgress.attributes[ATTR.WAITED_MS]).toBeGreaterThan(0);
    expect(inProgress.links[0]?.context.spanId).toBe(executed.spanContext().spanId);
    expect(conflict.attributes[ATTR.CONFLICT_REASON]).toBe('params_mismatch');
    expect(conflict.links[0]?.context.spanId).toBe(executed.spanContext().spanId);
    expect(byOutcome.get('rejected:key_required')?.status.code).toBe(SpanStatusCode.ERROR);
    expect(byOutcome.get('rejected:input_invalid')?.links).toEqual([]);
    const failed = byOutcome.get('failed:')!;
    expect(failed.attributes[ATTR.ERROR_TYPE]).toBe('tool_error');
    expect(failed.attributes[ATTR.ERROR_CODE]).toBe('TOOL_FAILED');
    expect(failed.events.map((e) => e.name)).toContain('exception');

    const severities = Object.fromEntries(
      harness()
        .logRecords()
        .map((r) => [`${r.attributes[ATTR.OUTCOME]}`, r.severityText]),
    );
    expect(severities).toMatchObject({
      executed: 'INFO',
      in_progress: 'WARN',
      conflict: 'WARN',
      rejected: 'WARN',
      failed: 'ERROR',
    });
    const wait = await harness().points(METRIC.WAIT_DURATION);
    expect(wait.length).toBeGreaterThan(0);
  });

  it("follows the GenAI conventions: the tool description, and error.type tool_error for the tool's own errors", async () => {
    // Prepare: a mutation that throws a final ToolFailure, one that throws a TypeError, a read that throws, and a
    // ledger refusal (no key)
    const ledger = await backend.open({ telemetry: { keyHashSecret: 'test-key-hash-secret' } });
    const charge = ledger.tool({
      name: 'charge_card',
      kind: 'mutation',
      description: 'Charges the customer card on file',
      handler: () => {
        throw new ToolFailure('card declined', { reason: 'card_declined' });
      },
    });
    const broken = ledger.tool({
      name: 'broken_mutation',
      kind: 'mutation',
      handler: () => {
        throw new TypeError('cannot read properties of undefined');
      },
    });
    const lookup = ledger.tool({
      name: 'lookup_order',
      kind: 'read',
      handler: () => {
        throw new RangeError('no such order');
      },
    });

    // Act
    await expect(charge.invoke({}, { key: 'charge-7' })).rejects.toMatchObject({ code: 'TOOL_FAILED' });
    await expect(charge.invoke({}, { key: 'charge-7' })).rejects.toMatchObject({ replayed: true });
    await expect(broken.invoke({}, { key: 'broken-1' })).rejects.toBeInstanceOf(TypeError);
    await expect(lookup.invoke({})).rejects.toBeInstanceOf(RangeError);
    // @ts-expect-error: the types require a key; the refusal is the ledger's, not the tool's
    await expect(charge.invoke({})).rejects.toMatchObject({ code: 'KEY_REQUIRED' });

    // Assess: spans
    const [failed, replayed, typeError, readError, refused] = callSpans();
    expect(failed?.attributes[ATTR.GEN_AI_TOOL_DESCRIPTION]).toBe('Charges the customer card on file');
    expect(typeError?.attributes).not.toHaveProperty(ATTR.GEN_AI_TOOL_DESCRIPTION);
    expect(failed?.attributes).toMatchObject({
      [ATTR.ERROR_TYPE]: 'tool_error',
      [ATTR.ERROR_CODE]: 'TOOL_FAILED',
    });
    expect(failed?.events[0]?.attributes?.['exception.type']).toBe('TOOL_FAILED');
    // A replayed final failure is the call's answer (status unset), and that answer is the tool's error
    expect(replayed?.attributes).toMatchObject({
      [ATTR.OUTCOME]: 'replayed',
      [ATTR.ERROR_TYPE]: 'tool_error',
    });
    expect(replayed?.status.code).toBe(SpanStatusCode.UNSET);
    expect(typeError?.attributes[ATTR.ERROR_TYPE]).toBe('tool_error');
    expect(typeError?.events[0]?.attributes?.['exception.type']).toBe('TypeError');
    expect(readError?.attributes).toMatchObject({
      [ATTR.OUTCOME]: 'failed',
      [ATTR.ERROR_TYPE]: 'tool_error',
    });
    expect(refused?.attributes[ATTR.ERROR_TYPE]).toBe('KEY_REQUIRED');

    // Assess: the log record carries error.type, not the description; the duration metric carries error.type
    const records = harness().logRecords();
    expect(records.map((r) => r.attributes[ATTR.ERROR_TYPE])).toEqual([
      'tool_error',
      'tool_error',
      'tool_error',
      'tool_error',
      'KEY_REQUIRED',
    ]);
    for (const r of records) expect(r.attributes).not.toHaveProperty(ATTR.GEN_AI_TOOL_DESCRIPTION);
    const durations = await harness().points(METRIC.EXECUTE_TOOL_DURATION);
    expect(new Set(durations.map((p) => p.attributes[ATTR.ERROR_TYPE]))).toEqual(new Set(['tool_error']));
  });

  it('telemetry faults leave results and outcomes unchanged', async () => {
    // Prepare: the same calls without telemetry, then with a throwing redactor and a broken pipeline
    const throwing: Redactor = {
      redactText: () => {
        throw new Error('redactor bug');
      },
      redactValue: () => {
        throw new Error('redactor bug');
      },
    };
    const tracerProvider = new BasicTracerProvider({
      spanProcessors: [throwingSpanProcessor(), new SimpleSpanProcessor(failingSpanExporter())],
    });
    const loggerProvider = new LoggerProvider({
      processors: [
        {
          onEmit: () => {
            throw new Error('log processor bug');
          },
          forceFlush: async () => {},
          shutdown: async () => {},
        },
      ],
    });
    const plain = await backend.open({ telemetry: false });
    const faulty = await backend.open({
      telemetry: { redactor: throwing, captureContent: true, tracerProvider, loggerProvider },
    });
    const run = async (ledger: typeof plain) => {
      const tool = ledger.tool({
        name: 'refund',
        kind: 'mutation',
        input: z.object({ amount: z.number() }),
        handler: (input) => {
          if (input.amount < 0) throw new ToolFailure('negative amount for maria.gonzalez@example.com');
          return { refunded: input.amount };
        },
      });
      const outcomes: unknown[] = [];
      for (const [amount, key] of [
        [5, 'a'],
        [5, 'a'],
        [-1, 'b'],
        [7, 'a'],
      ] as const) {
        outcomes.push(
          await tool.invoke({ amount }, { key }).then(
            (r) => [r.outcome, r.value],
            (e: { code?: string; message?: string }) => ['error', e.code, e.message],
          ),
        );
      }
      return outcomes;
    };

    // Act
    const expected = await run(plain);
    const actual = await run(faulty);

    // Assess
    expect(actual).toEqual(expected);
    expect(expected[0]).toEqual(['executed', { refunded: 5 }]);
  });
});
