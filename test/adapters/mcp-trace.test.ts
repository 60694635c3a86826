// One trace from an MCP client through Streamable HTTP into the ledger span (SEP-414: `traceparent` and
// `tracestate` in `params._meta`), with real clients and servers of both SDK lines on loopback.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpClientV2,
} from '@modelcontextprotocol/client';
import { NodeStreamableHTTPServerTransport, toNodeHandler } from '@modelcontextprotocol/node';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpClientV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport as HttpServerV1 } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createMcpHandler, type McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { context, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger } from '../../src/index.js';
import {
  MCP_ATTR,
  mcpTraceMeta,
  STATELESS_PROTOCOL_VERSION,
  withMcpTraceMeta,
} from '../../src/integrations/mcp/index.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';
import { type Line, lineServer, noteTool } from './fixtures/mcp-lines.js';

async function readBody(req: IncomingMessage): Promise<unknown> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body ? JSON.parse(body) : undefined;
}

/**
 * A loopback Streamable HTTP server of the line. Stateless, a server per request; or, for 1.x with `sessions`,
 * one server and transport holding a protocol session, as pre-2026-07-28 deployments run; or, for 2.x with
 * `modern`, the SDK's 2026-07-28 handler (which serves 2025-era requests statelessly too).
 */
async function httpServer(
  line: Line,
  ledger: Ledger,
  sessions: boolean,
  modern: boolean,
): Promise<{ url: URL; server: Server }> {
  const tool = noteTool(ledger);
  const modernHandler = modern
    ? toNodeHandler(createMcpHandler(() => lineServer('2.x', tool) as McpServerV2))
    : undefined;
  let stateful: HttpServerV1 | undefined;
  if (sessions) {
    stateful = new HttpServerV1({ sessionIdGenerator: randomUUID });
    await (lineServer('1.x', tool) as McpServerV1).connect(stateful);
  }
  const server = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      if (modernHandler) return modernHandler(req, res, body);
      if (stateful) return stateful.handleRequest(req, res, body);
      const mcp = lineServer(line, tool);
      if (line === '1.x') {
        const transport = new HttpServerV1({ sessionIdGenerator: undefined });
        await (mcp as McpServerV1).connect(transport);
        await transport.handleRequest(req, res, body);
      } else {
        const transport = new NodeStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
        await (mcp as McpServerV2).connect(transport);
        await transport.handleRequest(req, res, body);
      }
    })().catch((error) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: new URL(`http://127.0.0.1:${port}/mcp`), server };
}

// `modern`: the 2.x client negotiates the 2026-07-28 revision (`versionNegotiation: { mode: 'auto' }`); without
// it both lines speak 2025-11-25, the 2.x client's default.
const CASES = [
  { server: '1.x', client: '1.x', sessions: false, modern: false },
  { server: '1.x', client: '1.x', sessions: true, modern: false },
  { server: '2.x', client: '2.x', sessions: false, modern: false },
  { server: '2.x', client: '2.x', sessions: false, modern: true },
  { server: '1.x', client: '2.x', sessions: false, modern: false },
] as const;

describe.each(CASES)(
  'MCP server $server, client $client, over Streamable HTTP (sessions: $sessions, 2026-07-28: $modern)',
  ({ server: serverLine, client: clientLine, sessions, modern }) => {
    const harness = new TelemetryHarness();
    let ledger: Ledger;
    let http: Server;
    let client: ClientV1 | ClientV2;

    beforeAll(async () => {
      harness.registerGlobal();
      ledger = await createLedger({ pglite: 'memory://' });
      const made = await httpServer(serverLine, ledger, sessions, modern);
      http = made.server;
      if (clientLine === '1.x') {
        client = new ClientV1({ name: 't', version: '1' });
        await client.connect(new HttpClientV1(made.url));
      } else {
        client = new ClientV2(
          { name: 't', version: '1' },
          modern ? { versionNegotiation: { mode: 'auto' } } : {},
        );
        await client.connect(new HttpClientV2(made.url));
      }
    });

    afterAll(async () => {
      await client?.close();
      await new Promise((resolve) => (http ? http.close(resolve) : resolve(undefined)));
      await ledger?.close();
      await harness.shutdown();
      trace.disable();
      context.disable();
    });

    const ledgerSpans = () => harness.finishedSpans().filter((s) => s.name === 'execute_tool create_note');

    it('continues the client span: the ledger span is its child, in the same trace', async () => {
      const tracer = trace.getTracer('mcp-client-app');
      const clientSpan = tracer.startSpan('agent step');
      const sent = await context.with(trace.setSpan(context.active(), clientSpan), async () => {
        const params = withMcpTraceMeta({
          name: 'create_note',
          arguments: {
            text: 'traced',
            idempotency_key: `trace-${serverLine}-${clientLine}-${sessions}-${modern}`,
          },
        });
        await (client as ClientV1).callTool(params);
        return params;
      });
      clientSpan.end();

      expect(sent._meta?.traceparent).toBe(
        `00-${clientSpan.spanContext().traceId}-${clientSpan.spanContext().spanId}-01`,
      );
      const [span] = ledgerSpans();
      expect(span).toBeDefined();
      expect(span!.spanContext().traceId).toBe(clientSpan.spanContext().traceId);
      expect(span!.parentSpanContext?.spanId).toBe(clientSpan.spanContext().spanId);
      expect(span!.parentSpanContext?.isRemote).toBe(true);
    });

    it('starts a trace of its own for a request without trace context (the HTTP hop carries none by itself)', async () => {
      const tracer = trace.getTracer('mcp-client-app');
      const clientSpan = tracer.startSpan('untraced step');
      await context.with(trace.setSpan(context.active(), clientSpan), () =>
        (client as ClientV1).callTool({
          name: 'create_note',
          arguments: {
            text: 'plain',
            idempotency_key: `plain-${serverLine}-${clientLine}-${sessions}-${modern}`,
          },
        }),
      );
      clientSpan.end();
      const span = ledgerSpans().at(-1)!;
      expect(span.spanContext().traceId).not.toBe(clientSpan.spanContext().traceId);
    });

    it('sets mcp.session.id only for a peer older than 2026-07-28 that holds a session', () => {
      const attributes = ledgerSpans()[0]!.attributes;
      const version = attributes[MCP_ATTR.PROTOCOL_VERSION];
      expect(version).toBe(modern ? STATELESS_PROTOCOL_VERSION : '2025-11-25');
      if (sessions && String(version) < STATELESS_PROTOCOL_VERSION) {
        expect(attributes[MCP_ATTR.SESSION_ID]).toMatch(/^[0-9a-f-]{36}$/);
      } else {
        expect(attributes).not.toHaveProperty(MCP_ATTR.SESSION_ID);
      }
    });
  },
);

describe('mcpTraceMeta', () => {
  it('is empty without a valid span, and carries tracestate when the span has one', () => {
    expect(mcpTraceMeta(context.active())).toEqual({});
    const withState = trace.setSpanContext(context.active(), {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      traceState: { serialize: () => 'vendor=1' } as never,
    });
    expect(mcpTraceMeta(withState)).toEqual({
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate: 'vendor=1',
    });
    expect(withMcpTraceMeta({ name: 'x', _meta: { other: 1 } }, withState)._meta).toEqual({
      other: 1,
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      tracestate: 'vendor=1',
    });
  });
});

describe('parseTraceparent', () => {
  it('reads a W3C traceparent and refuses malformed, all-zero and version ff ones', async () => {
    const { parseTraceparent } = await import('../../src/integrations/shared/call-attributes.js');
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'a=1')).toMatchObject({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      isRemote: true,
    });
    // A later version may append fields; version 00 may not.
    expect(
      parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra')?.traceFlags,
    ).toBe(0);
    for (const bad of [
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      'x'.repeat(300),
      42,
    ]) {
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    }
  });
});
