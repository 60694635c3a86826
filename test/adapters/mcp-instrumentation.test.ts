import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT, runNode } from './support/built.js';

interface Report {
  results: Record<string, { isError?: boolean; content: Array<{ text?: string }> }>;
  spans: Array<{
    name: string;
    kind: number;
    scope: string;
    traceId: string;
    parentSpanId: string | undefined;
    status: number;
    attributes: Record<string, unknown>;
  }>;
  metrics: Record<
    string,
    Array<{ attributes: Record<string, unknown>; value: number; unit?: string; boundaries?: number[] }>
  >;
  logs: Array<{ eventName: string; attributes: Record<string, unknown> }>;
}

const FIXTURES = 'test/adapters/fixtures';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_SPAN_ID = '00f067aa0ba902b7';

beforeAll(() => {
  ensureBuilt();
});

describe.each([
  ['CommonJS require + registerInstrumentations', [`${FIXTURES}/mcp-otel-cjs.cjs`]],
  [
    'ESM import + register hook + NodeSDK',
    ['--import', `./${FIXTURES}/register-otel-hook.mjs`, `${FIXTURES}/mcp-otel-esm.mjs`],
  ],
])('ToolLedgerMcpInstrumentation under %s (built package)', (_mode, args) => {
  let report: Report;

  beforeAll(async () => {
    const run = await runNode(args);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    report = JSON.parse(run.stdout) as Report;
  });

  const spansOf = (tool: string) => report.spans.filter((s) => s.attributes['gen_ai.tool.name'] === tool);

  it('leaves the tools working as before', () => {
    expect(report.results.add!.content[0]!.text).toBe('5');
    expect(report.results.soft_fail!.isError).toBe(true);
    expect(report.results.explode!.isError).toBe(true);
  });

  it('gives every tool of the unmodified server one tools/call {tool} SERVER span with the MCP attributes', () => {
    const tools = ['add', 'lookup', 'explode', 'soft_fail', 'adopted', 'legacy', 'after_rename'];
    for (const [index, tool] of tools.entries()) {
      const spans = spansOf(tool);
      expect(spans, tool).toHaveLength(1);
      expect(spans[0]!.name).toBe(`tools/call ${tool}`);
      expect(spans[0]!.kind).toBe(1); // SpanKind.SERVER
      expect(spans[0]!.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'mcp.method.name': 'tools/call',
        'mcp.session.id': 'session-1',
        'jsonrpc.request.id': String(index + 1),
      });
    }
    expect(spansOf('add')[0]!.scope).toBe('tool-ledger');
    expect(spansOf('lookup')[0]!.attributes['tool_ledger.tool.kind']).toBe('read');
    expect(spansOf('add')[0]!.attributes).not.toHaveProperty('tool_ledger.idempotency.key');
  });

  it('continues the trace the client sent in _meta.traceparent', () => {
    const [add] = spansOf('add');
    expect(add!.traceId).toBe(TRACE_ID);
    expect(add!.parentSpanId).toBe(PARENT_SPAN_ID);
  });

  it('records thrown errors and isError results as failed', () => {
    expect(spansOf('explode')[0]).toMatchObject({
      status: 2,
      attributes: { 'tool_ledger.idempotency.outcome': 'failed', 'error.type': 'Error' },
    });
    expect(spansOf('soft_fail')[0]).toMatchObject({
      status: 2,
      attributes: { 'tool_ledger.idempotency.outcome': 'failed', 'error.type': 'tool_error' },
    });
  });

  it('adds its attributes to the tools/call span another instrumentation already opened, without a second span', () => {
    const [adopted] = spansOf('adopted');
    expect(adopted!.scope).toBe('transport');
    expect(report.spans.filter((s) => s.name === 'tools/call adopted')).toHaveLength(1);
  });

  it('records mcp.server.operation.duration in seconds with the MCP bucket advice and error.type', () => {
    const points = report.metrics['mcp.server.operation.duration']!;
    const of = (tool: string) => points.filter((p) => p.attributes['gen_ai.tool.name'] === tool);
    expect(of('add')).toEqual([
      {
        attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'add' },
        value: 1,
        unit: 's',
        boundaries: [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      },
    ]);
    expect(of('soft_fail')[0]!.attributes['error.type']).toBe('tool_error');
    expect(of('explode')[0]!.attributes['error.type']).toBe('Error');
    // Ledger tools report through their ledger's metrics; the instrumentation leaves them alone.
    expect(of('create_invoice')).toEqual([]);
  });

  it('adds the MCP attributes to the ledger span of a registerMcpTool tool, without a second span', () => {
    const spans = spansOf('create_invoice');
    expect(spans).toHaveLength(2);
    expect(spans.map((s) => s.attributes['tool_ledger.idempotency.outcome'])).toEqual([
      'executed',
      'replayed',
    ]);
    for (const span of spans) {
      expect(span.attributes).toMatchObject({
        'mcp.method.name': 'tools/call',
        'mcp.session.id': 'session-1',
        'tool_ledger.idempotency.key': 'k1',
      });
    }
    expect(report.spans).toHaveLength(9);
  });

  it('emits one decision log record and the call metrics per call', () => {
    expect(report.logs).toHaveLength(9);
    expect(new Set(report.logs.map((l) => l.eventName))).toEqual(new Set(['tool_ledger.decision']));
    expect(report.logs.find((l) => l.attributes['gen_ai.tool.name'] === 'add')!.attributes).toMatchObject({
      'mcp.session.id': 'session-1',
    });
    const calls = report.metrics['tool_ledger.tool.calls']!;
    const count = (tool: string, outcome: string) =>
      calls.find(
        (p) =>
          p.attributes['gen_ai.tool.name'] === tool &&
          p.attributes['tool_ledger.idempotency.outcome'] === outcome,
      )?.value;
    expect(count('add', 'executed')).toBe(1);
    expect(count('soft_fail', 'failed')).toBe(1);
    expect(count('create_invoice', 'replayed')).toBe(1);
    // Session and request ids are per call: never metric labels.
    for (const point of calls) expect(point.attributes).not.toHaveProperty('mcp.session.id');
    expect(report.metrics['gen_ai.execute_tool.duration']).toBeDefined();
  });
});

describe('package entry points', () => {
  const SDKS = ['@modelcontextprotocol/sdk', '@openai/agents', 'ai', '@opentelemetry/instrumentation', 'zod'];

  /** Every bare module specifier reachable from a built entry through relative imports. */
  function bareImports(entry: string): Set<string> {
    const seen = new Set<string>();
    const bare = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      for (const match of source.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)) {
        const specifier = match[1]!;
        if (specifier.startsWith('.')) visit(resolve(dirname(file), specifier));
        else bare.add(specifier);
      }
    };
    visit(join(ROOT, 'dist', entry));
    return bare;
  }

  it.each([
    ['tool-ledger', 'deriveKey'],
    ['tool-ledger/mcp', 'registerMcpTool'],
    ['tool-ledger/mcp-instrumentation', 'ToolLedgerMcpInstrumentation'],
    ['tool-ledger/openai-agents', 'ledgerFunctionTool'],
    ['tool-ledger/ai-sdk', 'ledgerAiTool'],
  ])('%s resolves by name to the built package and exports %s', async (entry, name) => {
    const run = await runNode([
      '--input-type=module',
      '-e',
      `const m = await import(${JSON.stringify(entry)}); process.stdout.write(typeof m[${JSON.stringify(name)}]);`,
    ]);
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('function');
  });

  it('the instrumentation also loads with require()', async () => {
    const run = await runNode([
      '-e',
      "process.stdout.write(typeof require('tool-ledger/mcp-instrumentation').ToolLedgerMcpInstrumentation)",
    ]);
    expect(run.stdout).toBe('function');
  });

  it('patches MCP SDK 2.x under require too: a tools/call span and the operation metric per call', async () => {
    const run = await runNode([`${FIXTURES}/mcp-otel-v2-cjs.cjs`]);
    expect(run.code, run.stderr).toBe(0);
    const report = JSON.parse(run.stdout) as Report;
    const add = report.spans.find((s) => s.name === 'tools/call add');
    expect(add?.kind).toBe(1); // SERVER
    expect(add?.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'add' });
    const failed = report.spans.find((s) => s.name === 'tools/call soft_fail');
    expect(failed?.attributes['error.type']).toBe('tool_error');
    expect(report.metrics['mcp.server.operation.duration']?.length).toBe(2);
  });

  it.each([
    ['an ES module entry without the loader hook', [`${FIXTURES}/mcp-otel-no-hook.mjs`], true],
    [
      'an ES module entry with the loader hook',
      ['--import', `./${FIXTURES}/register-otel-hook.mjs`, `${FIXTURES}/mcp-otel-no-hook.mjs`],
      false,
    ],
    ['a CommonJS entry', [`${FIXTURES}/mcp-otel-no-hook.cjs`], false],
  ])('warns once when enabled in %s: %s', async (_entry, args, warns) => {
    const run = await runNode(args);
    expect(run.code, run.stderr).toBe(0);
    const warnings = run.stderr.match(/TOOL_LEDGER_MCP_NO_LOADER_HOOK/g) ?? [];
    expect(warnings.length > 0).toBe(warns);
    if (warns) expect(run.stderr).toContain("module.register('@opentelemetry/instrumentation/hook.mjs'");
  });

  it('the root entry pulls in no agent SDK', () => {
    const imports = [...bareImports('index.js')];
    for (const sdk of SDKS) expect(imports.filter((s) => s === sdk || s.startsWith(`${sdk}/`))).toEqual([]);
  });

  it('the instrumentation never loads the MCP SDK it patches', () => {
    const imports = [...bareImports('integrations/mcp-instrumentation/index.js')];
    expect(imports.filter((s) => s.startsWith('@modelcontextprotocol/'))).toEqual([]);
  });
});
