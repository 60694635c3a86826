// The gateway as a library (startGateway) with an OpenTelemetry SDK in the process: the client's
// _meta.traceparent continues through the gateway's server span, the ledger's execute_tool span and the client
// span whose context the upstream receives; a replay links to the original execution. Over an in-memory
// transport, and over Streamable HTTP with clients of both SDK lines.
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningGateway, startGateway } from '../../src/gateway/index.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';
import { type AnyClient, callTool, database, databaseUrl, httpClient, outcome, ROOT } from './support.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_SPAN = 'b7ad6b7169203331';

const db = database();
const schema = `gw_otel_${process.pid}`;
const harness = new TelemetryHarness();
const upstream = { command: process.execPath, args: [join(ROOT, 'test/gateway/fixtures/probe-server.mjs')] };
const gateways: RunningGateway[] = [];
const clients: AnyClient[] = [];

beforeAll(() => {
  harness.registerGlobal();
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(async () => {
  await Promise.allSettled(clients.map((c) => c.close()));
  await Promise.allSettled(gateways.map((g) => g.close()));
  trace.disable();
  context.disable();
  propagation.disable();
  await db.drop(schema);
  await db.end();
});

const CASES = [
  { via: 'in-memory', line: '1.x' },
  { via: 'Streamable HTTP', line: '1.x' },
  { via: 'Streamable HTTP', line: '2.x' },
] as const;

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe.each(CASES)('gateway telemetry over $via, MCP SDK $line client', ({ via, line }) => {
  const key = `otel-${via === 'in-memory' ? 'mem' : 'http'}-${line}`;
  let client: AnyClient;
  beforeAll(async () => {
    const common = {
      upstream,
      ledger: { connectionString: databaseUrl(), schema },
      tenant: 'acme',
      log: () => {},
    };
    if (via === 'in-memory') {
      const [clientSide, gatewaySide] = InMemoryTransport.createLinkedPair();
      gateways.push(await startGateway({ ...common, downstream: gatewaySide }));
      const memory = new Client({ name: 'otel-test', version: '1' });
      await memory.connect(clientSide);
      client = memory;
    } else {
      const gateway = await startGateway({ ...common, listen: { host: '127.0.0.1', port: 0 } });
      gateways.push(gateway);
      client = await httpClient(line, gateway.url as URL);
    }
    clients.push(client);
  });

  it('continues the client trace: gateway server span, ledger span, client span, upstream', async () => {
    harness.spans.reset();
    const result = await callTool(
      client,
      'record_args',
      { note: 'traced', idempotency_key: key },
      { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` },
    );
    expect(outcome(result)).toBe('executed');
    const spans = harness.spans.getFinishedSpans();
    const server = spans.find((s) => s.name === 'tools/call record_args' && s.kind === SpanKind.SERVER);
    const ledger = spans.find((s) => s.name === 'execute_tool record_args');
    const upstreamSpan = spans.find((s) => s.name === 'tools/call record_args' && s.kind === SpanKind.CLIENT);
    expect(server && ledger && upstreamSpan).toBeTruthy();
    for (const span of [server, ledger, upstreamSpan]) expect(span?.spanContext().traceId).toBe(TRACE_ID);
    expect(parentOf(server!)).toBe(CLIENT_SPAN);
    expect(parentOf(ledger!)).toBe(server!.spanContext().spanId);
    expect(parentOf(upstreamSpan!)).toBe(ledger!.spanContext().spanId);
    expect(server!.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'record_args',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': via === 'in-memory' ? 'pipe' : 'tcp',
    });
    if (via !== 'in-memory') expect(server!.attributes['mcp.session.id']).toEqual(expect.any(String));
    expect(ledger!.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'tool_ledger.idempotency.outcome': 'executed',
      'tool_ledger.tenant.id': 'acme',
    });
    // The upstream received the gateway's client span as its parent.
    const seen = result.structuredContent as { meta: { traceparent?: string } };
    expect(seen.meta.traceparent).toBe(`00-${TRACE_ID}-${upstreamSpan!.spanContext().spanId}-01`);
  });

  it('links a replay to the original execution and sends nothing upstream', async () => {
    const original = harness.spans.getFinishedSpans().find((s) => s.name === 'execute_tool record_args');
    harness.spans.reset();
    const again = await callTool(client, 'record_args', { note: 'traced', idempotency_key: key });
    expect(outcome(again)).toBe('replayed');
    const spans = harness.spans.getFinishedSpans();
    expect(spans.some((s) => s.kind === SpanKind.CLIENT)).toBe(false);
    const ledger = spans.find((s) => s.name === 'execute_tool record_args');
    const server = spans.find((s) => s.kind === SpanKind.SERVER);
    for (const span of [ledger, server]) {
      expect(span?.links.map((l) => l.context.spanId)).toContain(original!.spanContext().spanId);
    }
    expect(ledger!.attributes['tool_ledger.idempotency.outcome']).toBe('replayed');
  });
});
