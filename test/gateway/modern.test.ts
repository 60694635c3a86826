// The 2026-07-28 revision (sessionless Streamable HTTP, server discovery) beside the session-based one, on one
// gateway endpoint: an SDK 2.x client that negotiates (auto) or pins 2026-07-28 discovers the server and calls it
// with no session; a replay comes from the ledger; SDK 1.x and legacy 2.x clients keep their sessions. The client's
// _meta.traceparent is continued, and the span names the revision and carries no mcp.session.id.
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpClientV2,
} from '@modelcontextprotocol/client';
import { context, propagation, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningGateway, startGateway } from '../../src/gateway/index.js';
import { MCP_ATTR } from '../../src/integrations/mcp/attributes.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';
import {
  type AnyClient,
  callTool,
  databaseUrl,
  EVERYTHING_SERVER,
  gatewaySuite,
  httpClient,
  outcome,
} from './support.js';

const suite = gatewaySuite('modern');
const { schema } = suite;
const harness = new TelemetryHarness();
let gateway: RunningGateway;
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

async function modernClient(mode: 'auto' | { pin: string }): Promise<AnyClient> {
  const client = new ClientV2({ name: 'modern-test', version: '1' }, { versionNegotiation: { mode } });
  await client.connect(new HttpClientV2(gateway.url as URL));
  return (await suite.client(client)) as unknown as AnyClient;
}

beforeAll(async () => {
  harness.registerGlobal();
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  gateway = await suite.onClose(
    startGateway({
      upstream: { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] },
      ledger: { connectionString: databaseUrl(), schema },
      listen: { host: '127.0.0.1', port: 0 },
      tenant: 'acme',
      log: () => {},
    }),
  );
});
afterAll(() => {
  trace.disable();
  context.disable();
  propagation.disable();
});

describe.each([{ mode: 'auto' as const }, { mode: { pin: '2026-07-28' } }])(
  '2.x client, negotiation $mode',
  ({ mode }) => {
    const tag = typeof mode === 'string' ? mode : 'pin';
    it('lists tools with the key argument and replays a repeated mutation, sessionless', async () => {
      const client = await modernClient(mode);
      const { tools } = await client.listTools();
      const toggle = tools.find((t) => t.name === 'toggle-simulated-logging');
      expect(toggle?.inputSchema.required).toContain('idempotency_key');
      const first = await callTool(client, 'toggle-simulated-logging', { idempotency_key: `modern-${tag}` });
      expect(outcome(first)).toBe('executed');
      const again = await callTool(client, 'toggle-simulated-logging', { idempotency_key: `modern-${tag}` });
      expect(outcome(again)).toBe('replayed');
      expect((await callTool(client, 'echo', { message: 'hi' })).content[0]?.text).toMatch(/hi/);
    });
  },
);

it('continues the trace from params._meta, names the revision and carries no session id', async () => {
  const client = await modernClient({ pin: '2026-07-28' });
  harness.spans.reset();
  const parent = `00-${TRACE_ID}-00f067aa0ba902b7-01`;
  expect(
    outcome(
      await callTool(
        client,
        'toggle-simulated-logging',
        { idempotency_key: 'modern-trace' },
        { traceparent: parent },
      ),
    ),
  ).toBe('executed');
  const server = harness.spans
    .getFinishedSpans()
    .find((s) => s.name === 'tools/call toggle-simulated-logging' && s.kind === 1);
  expect(server?.spanContext().traceId).toBe(TRACE_ID);
  expect(server?.attributes[MCP_ATTR.PROTOCOL_VERSION]).toBe('2026-07-28');
  expect(server?.attributes[MCP_ATTR.SESSION_ID]).toBeUndefined();
});

it('keeps serving session-based clients of both lines on the same endpoint', async () => {
  for (const line of ['1.x', '2.x'] as const) {
    const client = await suite.client(httpClient(line, gateway.url as URL));
    expect(
      outcome(await callTool(client, 'toggle-simulated-logging', { idempotency_key: `legacy-${line}` })),
    ).toBe('executed');
  }
});
