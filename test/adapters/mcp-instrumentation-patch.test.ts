import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import * as mcp from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type Attributes, context, type Span, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, type Ledger } from '../../src/index.js';
import { registerMcpTool } from '../../src/integrations/mcp/index.js';
import { ToolLedgerMcpInstrumentation } from '../../src/integrations/mcp-instrumentation/index.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';
import { catchWarnings } from '../support/warnings.js';

// In-process checks of the patch itself. vitest loads modules through its own loader, which the require and
// import hooks do not see, so the module definition's patch is applied to the SDK's exports by hand here; the
// hooks themselves are tested against the built package in mcp-instrumentation.test.ts.
const harness = new TelemetryHarness();
let instrumentation: ToolLedgerMcpInstrumentation;
let ledger: Ledger;

function patchFile() {
  const [definition] = instrumentation.getModuleDefinitions();
  return definition!.files.find((f) => f.name.endsWith('esm/server/mcp.js'))!;
}

async function connect(server: mcp.McpServer): Promise<Client> {
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await server.connect(serverTransport);
  const client = new Client({ name: 'patch-test', version: '1.0.0' });
  await client.connect(clientTransport);
  return client;
}

const spanNames = () => harness.finishedSpans().map((s) => s.name);

// The test worker is an ES module process started without a loader hook, so enable() warns that ES module
// imports are not patched: true, and the reason the patch is applied by hand here. mcp-instrumentation.test.ts
// asserts that warning in real processes; here it is caught, not printed.
const noHookWarning = catchWarnings('TOOL_LEDGER_MCP_NO_LOADER_HOOK');

beforeAll(async () => {
  // As any SDK setup does; without a context manager, context values (the MCP attributes) cannot flow.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  instrumentation = new ToolLedgerMcpInstrumentation({ enabled: false });
  instrumentation.setTracerProvider(harness.tracerProvider);
  instrumentation.setMeterProvider(harness.meterProvider);
  instrumentation.setLoggerProvider(harness.loggerProvider);
  ledger = await createLedger({ pglite: 'memory://', telemetry: harness.providers() });
});

afterEach(() => {
  harness.spans.reset();
});

afterAll(async () => {
  patchFile().unpatch(mcp);
  await ledger?.close();
  await harness.shutdown();
  context.disable();
  noHookWarning.restore();
});

describe('ToolLedgerMcpInstrumentation patch', () => {
  it('wraps registerTool once, however often the patch is applied, and unwraps it', () => {
    const original = mcp.McpServer.prototype.registerTool;
    instrumentation.enable();
    patchFile().patch(mcp);
    const patched = mcp.McpServer.prototype.registerTool;
    expect(patched).not.toBe(original);
    patchFile().patch(mcp);
    expect(mcp.McpServer.prototype.registerTool).toBe(patched);
    patchFile().unpatch(mcp);
    expect(mcp.McpServer.prototype.registerTool).toBe(original);
    patchFile().patch(mcp);
  });

  it('traces plain tools, follows update() to a new callback and name, and skips ledger tools', async () => {
    const server = new mcp.McpServer({ name: 's', version: '1' });
    const registered = server.registerTool('first', {}, async () => ({
      content: [{ type: 'text', text: 'a' }],
    }));
    registerMcpTool(
      server,
      ledger.tool({
        name: 'ledgered',
        kind: 'mutation',
        input: z.object({}),
        handler: () => ({ ok: true }),
      }),
    );
    const client = await connect(server);
    await client.callTool({ name: 'first', arguments: {} });
    registered.update({
      name: 'renamed',
      callback: async () => ({ content: [{ type: 'text', text: 'b' }] }),
    });
    const renamed = await client.callTool({ name: 'renamed', arguments: {} });
    expect(renamed.content).toEqual([{ type: 'text', text: 'b' }]);
    await client.callTool({ name: 'ledgered', arguments: { idempotency_key: 'k' } });
    await client.close();
    // Instrumented tools get MCP server spans; the ledger tool keeps its own execute_tool span.
    expect(spanNames()).toEqual(['tools/call first', 'tools/call renamed', 'execute_tool ledgered']);
    const ledgered = harness.finishedSpans()[2]!;
    expect(ledgered.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'tool_ledger.idempotency.key': 'k',
    });
  });

  it('records nothing while disabled, and the tools keep working', async () => {
    const server = new mcp.McpServer({ name: 's', version: '1' });
    server.registerTool('quiet', {}, async () => ({ content: [{ type: 'text', text: 'ok' }] }));
    const client = await connect(server);
    instrumentation.disable();
    const result = await client.callTool({ name: 'quiet', arguments: {} });
    expect(result.content).toEqual([{ type: 'text', text: 'ok' }]);
    expect(spanNames()).toEqual([]);
    instrumentation.enable();
    patchFile().patch(mcp);
    await client.callTool({ name: 'quiet', arguments: {} });
    expect(spanNames()).toEqual(['tools/call quiet']);
    await client.close();
  });
});

describe('ToolLedgerMcpInstrumentation on the MCP semantic conventions', () => {
  beforeAll(() => {
    if (!instrumentation.isEnabled()) instrumentation.enable();
    patchFile().patch(mcp);
  });

  function semconvServer(): mcp.McpServer {
    const server = new mcp.McpServer({ name: 's', version: '1' });
    server.registerTool('ok', {}, async () => ({ content: [{ type: 'text', text: 'fine' }] }));
    server.registerTool('soft', {}, async () => ({ isError: true, content: [{ type: 'text', text: 'no' }] }));
    server.registerTool('throws', {}, async () => {
      throw new TypeError('bad');
    });
    return server;
  }

  async function durationPoints(tool: string) {
    const points = await harness.points('mcp.server.operation.duration');
    return points.filter((p) => p.attributes['gen_ai.tool.name'] === tool);
  }

  it('opens one SERVER span named tools/call {tool} with the MCP and GenAI attributes', async () => {
    const client = await connect(semconvServer());
    await client.callTool({ name: 'ok', arguments: {} });
    await client.close();
    const [span, ...others] = harness.finishedSpans();
    expect(others).toEqual([]);
    expect(span!.name).toBe('tools/call ok');
    expect(span!.kind).toBe(SpanKind.SERVER);
    expect(span!.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'ok',
      'gen_ai.operation.name': 'execute_tool',
    });
    expect(span!.attributes['jsonrpc.request.id']).toMatch(/^\d+$/);
    expect(span!.attributes).not.toHaveProperty('error.type');
  });

  it('sets error.type tool_error on an isError result, and the thrown class name on a throw', async () => {
    const client = await connect(semconvServer());
    await client.callTool({ name: 'soft', arguments: {} });
    await client.callTool({ name: 'throws', arguments: {} });
    await client.close();
    const [soft, thrown] = harness.finishedSpans();
    expect(soft!.attributes['error.type']).toBe('tool_error');
    expect(soft!.status.code).toBe(2);
    expect(thrown!.attributes['error.type']).toBe('TypeError');
  });

  it('sets network.transport pipe, on the span and the metric, for a server on stdio', async () => {
    const server = semconvServer();
    const toServer = new PassThrough();
    const fromServer = new PassThrough();
    await server.connect(new StdioServerTransport(toServer, fromServer));
    // The client end of the server's stdin and stdout, as a spawned server's parent process holds them.
    const buffer = new ReadBuffer();
    const clientTransport: Transport = {
      async start() {
        fromServer.on('data', (chunk: Buffer) => {
          buffer.append(chunk);
          for (let message = buffer.readMessage(); message; message = buffer.readMessage()) {
            clientTransport.onmessage?.(message);
          }
        });
      },
      async send(message) {
        toServer.write(serializeMessage(message));
      },
      async close() {
        clientTransport.onclose?.();
      },
    };
    const client = new Client({ name: 'patch-test', version: '1.0.0' });
    await client.connect(clientTransport);
    await client.callTool({ name: 'ok', arguments: {} });
    await client.close();
    await server.close();
    const [span] = harness.finishedSpans();
    expect(span!.attributes['network.transport']).toBe('pipe');
    const points = await durationPoints('ok');
    expect(points.map((p) => p.attributes['network.transport'])).toContain('pipe');
  });

  it('records mcp.server.operation.duration in seconds with the MCP bucket advice', async () => {
    const metric = await harness.metric('mcp.server.operation.duration');
    expect(metric!.descriptor.unit).toBe('s');
    // The in-memory calls; the stdio one above is its own series, by network.transport.
    const ok = (await durationPoints('ok')).find((p) => !('network.transport' in p.attributes));
    expect(ok!.attributes).toEqual({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'ok' });
    const histogram = ok!.value as { count: number; buckets: { boundaries: number[] } };
    expect(histogram.count).toBe(1);
    expect(histogram.buckets.boundaries).toEqual([
      0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300,
    ]);
    const [soft] = await durationPoints('soft');
    expect(soft!.attributes['error.type']).toBe('tool_error');
    const [thrown] = await durationPoints('throws');
    expect(thrown!.attributes['error.type']).toBe('TypeError');
  });

  /**
   * Stands in for a transport instrumentation: each `tools/call` message the server receives is handled inside a
   * span it opened (named by `name`, ended by the test), so the tool callback runs with that span active.
   */
  async function connectTraced(server: mcp.McpServer, name: string, attributes: Attributes = {}) {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await server.connect(serverTransport);
    const tracer = harness.tracerProvider.getTracer('transport');
    const opened: Span[] = [];
    const deliver = serverTransport.onmessage!;
    serverTransport.onmessage = (message, extra) => {
      if (!('method' in message) || message.method !== 'tools/call') return deliver(message, extra);
      const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes });
      opened.push(span);
      context.with(trace.setSpan(context.active(), span), () => deliver(message, extra));
    };
    const client = new Client({ name: 'patch-test', version: '1.0.0' });
    await client.connect(clientTransport);
    return { client, opened };
  }

  it('adds its attributes to an active tools/call span of another instrumentation, without a second span', async () => {
    const { client, opened } = await connectTraced(semconvServer(), 'tools/call soft');
    await client.callTool({ name: 'soft', arguments: {} });
    for (const span of opened) span.end();
    await client.close();
    const spans = harness.finishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['tools/call soft']);
    expect(spans[0]!.instrumentationScope.name).toBe('transport');
    expect(spans[0]!.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'soft',
      'gen_ai.operation.name': 'execute_tool',
      'error.type': 'tool_error',
    });
    expect(await durationPoints('soft')).toHaveLength(1);
  });

  it('also adopts an active span that carries mcp.method.name, whatever its name', async () => {
    const { client, opened } = await connectTraced(semconvServer(), 'rpc', {
      'mcp.method.name': 'tools/call',
    });
    await client.callTool({ name: 'ok', arguments: {} });
    for (const span of opened) span.end();
    await client.close();
    expect(spanNames()).toEqual(['rpc']);
    expect(harness.finishedSpans()[0]!.attributes['gen_ai.tool.name']).toBe('ok');
  });

  it('opens its own child span under an active span of no MCP call (an HTTP request) or of another request', async () => {
    for (const [name, attributes] of [
      ['POST /mcp', {}],
      ['tools/call ok', { 'jsonrpc.request.id': 'another-request' }],
    ] as const) {
      harness.spans.reset();
      const { client, opened } = await connectTraced(semconvServer(), name, attributes);
      await client.callTool({ name: 'ok', arguments: {} });
      for (const span of opened) span.end();
      await client.close();
      const [own, outer] = harness.finishedSpans();
      expect(own!.name).toBe('tools/call ok');
      expect(own!.instrumentationScope.name).toBe('tool-ledger');
      expect(own!.parentSpanContext?.spanId).toBe(outer!.spanContext().spanId);
    }
  });
});
