import { SpanStatusCode } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../../src/index.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { postgresBackend } from '../../support/db.js';
import { useGlobalHarness } from '../../support/telemetry-harness.js';

// Steps as child spans of the call (issue 22), and outcome=unknown in the calls metric, via in-memory exporters.
describe('telemetry of recorded steps', () => {
  const backend = postgresBackend();
  const harness = useGlobalHarness();

  it('emits one child span per step with its name and whether it ran, scrubbing captured results', async () => {
    // Prepare
    const ledger = await backend.open({ telemetry: { captureContent: true } });
    const tool = ledger.tool({
      name: 'pay',
      kind: 'mutation',
      handler: async (_: unknown, ctx) => {
        await ctx.step('charge', () => ({ receiptTo: 'maria.garcia@example.com' }));
        return ctx.step('email', () => 'sent');
      },
    });

    // Act
    await tool.call({}, { key: 'k-span' });

    // Assess
    const spans = harness().finishedSpans();
    const call = spans.find((s) => s.name === 'execute_tool pay');
    const steps = spans.filter((s) => s.name.startsWith('step '));
    expect(steps.map((s) => s.name)).toEqual(['step charge', 'step email']);
    for (const step of steps) {
      expect(step.parentSpanContext?.spanId).toBe(call?.spanContext().spanId);
      expect(step.attributes[ATTR.STEP_OUTCOME]).toBe('executed');
      expect(step.attributes[ATTR.GEN_AI_TOOL_NAME]).toBe('pay');
    }
    expect(steps[0]?.attributes[ATTR.STEP_NAME]).toBe('charge');
    const captured = String(steps[0]?.attributes[ATTR.GEN_AI_TOOL_CALL_RESULT]);
    expect(captured).not.toContain('maria.garcia@example.com');
  });

  it('marks an unknown step as an error span and counts the call as outcome unknown', async () => {
    // Prepare
    const ledger = await backend.open({ telemetry: {} });
    const tool = ledger.tool({
      name: 'send',
      kind: 'mutation',
      handler: async (_: unknown, ctx) =>
        ctx.step('send', () => {
          throw new OutcomeUnknownError('hung up after sending');
        }),
    });

    // Act
    await tool.call({}, { key: 'k-u' }).catch(() => undefined);
    await tool.call({}, { key: 'k-u' }).catch(() => undefined);

    // Assess
    const step = harness()
      .finishedSpans()
      .find((s) => s.name === 'step send');
    expect(step?.attributes[ATTR.STEP_OUTCOME]).toBe('unknown');
    expect(step?.status.code).toBe(SpanStatusCode.ERROR);
    const outcomes = (await harness().points(METRIC.TOOL_CALLS)).map((p) => p.attributes[ATTR.OUTCOME]);
    expect(outcomes).toEqual(['unknown']);
    const calls = (await harness().points(METRIC.TOOL_CALLS)).map((p) => p.value);
    expect(calls).toEqual([2]);
  });
});
