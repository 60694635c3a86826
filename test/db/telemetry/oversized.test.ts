import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolFailure } from '../../../src/index.js';
import { ATTR } from '../../../src/telemetry/vocabulary.js';
import { pgliteBackend } from '../../support/db.js';
import { TelemetryHarness } from '../../support/telemetry-harness.js';

/**
 * Issue 11: a 1 MB key, tenant, tool call id, error message or input changes neither the call's outcome nor the
 * size of what it exports: everything a caller controls is length-checked before any costly work, and text is
 * cut to its cap before it is scrubbed. (Its cost in milliseconds is printed by bench/oversized.mjs.)
 */

const MB = 1024 * 1024;
// A 1 MB value is exported as at most its cap (4,096 characters) plus a marker; a call's signals stay far below.
const MAX_EXPORTED_BYTES_PER_CALL = 64 * 1024;

const backend = pgliteBackend();
const harness = new TelemetryHarness();

type Case = readonly [name: string, run: (tools: Tools) => Promise<unknown>];
interface Tools {
  echo: { invoke(input: unknown, context: Record<string, unknown>): Promise<{ outcome: string }> };
  explode: { invoke(input: unknown, context: Record<string, unknown>): Promise<{ outcome: string }> };
}

const cases: readonly Case[] = [
  ['a 1 MB key', (t) => t.echo.invoke({ n: 1 }, { key: 'k'.repeat(MB) })],
  ['a 1 MB tenant', (t) => t.echo.invoke({ n: 2 }, { key: 'big-tenant-1', tenant: 't'.repeat(MB) })],
  [
    'a 1 MB tool call id',
    (t) => t.echo.invoke({ n: 3 }, { key: 'big-call-id-1', toolCallId: 'c'.repeat(MB) }),
  ],
  [
    'a 1 MB input',
    (t) => t.echo.invoke({ text: `maria.gonzalez@example.com ${'x'.repeat(MB)}` }, { key: 'big-input-1' }),
  ],
  ['a 1 MB error message with a 1 MB cause', (t) => t.explode.invoke({ n: 5 }, { key: 'big-error-1' })],
];

/** What a call exports, serialized: its span (attributes, events, status) and its log record. */
function exportedBytes(): number {
  const spans = harness.finishedSpans().map((s) => ({
    attributes: s.attributes,
    events: s.events,
    status: s.status,
  }));
  const logs = harness.logRecords().map((r) => ({ body: r.body, attributes: r.attributes }));
  return Buffer.byteLength(JSON.stringify({ spans, logs }));
}

let withTelemetry: Tools;
let without: Tools;

beforeAll(async () => {
  const open = async (telemetry: boolean): Promise<Tools> => {
    const ledger = await backend.open(
      telemetry
        ? {
            telemetry: {
              ...harness.providers(),
              captureContent: true,
              keyHashSecret: 'test-key-hash-secret',
            },
          }
        : {},
    );
    const echo = ledger.tool({
      name: 'echo',
      kind: 'mutation',
      handler: async (input) => ({ echoed: input }),
    });
    const explode = ledger.tool({
      name: 'explode',
      kind: 'mutation',
      handler: async () => {
        throw new ToolFailure(`failed for maria.gonzalez@example.com ${'e'.repeat(MB)}`, {
          cause: new Error(`cause ${'c'.repeat(MB)}`),
        });
      },
    });
    return { echo, explode } as unknown as Tools;
  };
  withTelemetry = await open(true);
  without = await open(false);
}, 120_000);

afterAll(async () => {
  await harness.shutdown();
});

const settle = (p: Promise<unknown>) =>
  p.then(
    (r) => ['ok', (r as { outcome: string }).outcome],
    (e: { code?: string; name?: string }) => ['error', e.code ?? e.name],
  );

describe('oversized caller input through a real ledger and SDK', () => {
  it.each(cases)('%s: the same outcome as without telemetry, and a bounded export', async (_name, run) => {
    harness.spans.reset();
    harness.logExporter.reset();
    const expected = await settle(run(without));
    const actual = await settle(run(withTelemetry));
    expect(actual).toEqual(expected);
    const spans = harness.finishedSpans();
    expect(spans).toHaveLength(1);
    expect(exportedBytes()).toBeLessThan(MAX_EXPORTED_BYTES_PER_CALL);
    expect(JSON.stringify(spans[0]!.attributes)).not.toContain('maria.gonzalez@example.com');
    // Never scrubbed or hashed: a key or tool call id the ledger refuses leaves no trace of itself.
    for (const name of [ATTR.IDEMPOTENCY_KEY, ATTR.GEN_AI_TOOL_CALL_ID, ATTR.TENANT_ID]) {
      expect(String(spans[0]!.attributes[name] ?? '').length).toBeLessThanOrEqual(1024);
    }
  });
});
