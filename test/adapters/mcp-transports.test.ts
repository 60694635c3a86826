// Both MCP SDK lines with a real client of the same line, over stdio (a child process, as desktop clients run
// servers) and over Streamable HTTP (a node:http server on loopback, stateless: a server per request).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpClientV2,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientV2 } from '@modelcontextprotocol/client/stdio';
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioClientV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpClientV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport as HttpServerV1 } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger } from '../../src/index.js';
import { MCP_CALL_META_KEY, MCP_ERROR_META_KEY, MCP_KEY_META_KEY } from '../../src/integrations/mcp/index.js';
import { type Line, lineServer, noteTool } from './fixtures/mcp-lines.js';
import { ROOT } from './support/built.js';

type AnyClient = ClientV1 | ClientV2;
type Result = {
  content: Array<{ text?: string }>;
  structuredContent?: unknown;
  _meta?: Record<string, unknown>;
};

async function readBody(req: IncomingMessage): Promise<unknown> {
  let body = '';
  for await (const chunk of req) body += chunk;
  return body ? JSON.parse(body) : undefined;
}

/** A loopback HTTP server answering every POST with a fresh MCP server of the line (stateless). */
async function httpServer(line: Line, ledger: Ledger): Promise<{ url: URL; server: Server }> {
  const tool = noteTool(ledger);
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
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

function stdioClient(line: Line): { client: AnyClient; transport: StdioClientV1 | StdioClientV2 } {
  const params = {
    command: process.execPath,
    args: ['--import', 'tsx', join(ROOT, 'test/adapters/fixtures/mcp-stdio-server.ts'), line],
    cwd: ROOT,
    stderr: 'pipe' as const,
  };
  return line === '1.x'
    ? { client: new ClientV1({ name: 't', version: '1' }), transport: new StdioClientV1(params) }
    : { client: new ClientV2({ name: 't', version: '1' }), transport: new StdioClientV2(params) };
}

const CASES = [
  { line: '1.x', transport: 'stdio', network: 'pipe' },
  { line: '2.x', transport: 'stdio', network: 'pipe' },
  { line: '1.x', transport: 'Streamable HTTP', network: 'tcp' },
  { line: '2.x', transport: 'Streamable HTTP', network: 'tcp' },
] as const;

describe.each(CASES)('MCP SDK $line over $transport', ({ line, transport, network }) => {
  let ledger: Ledger | undefined;
  let http: Server | undefined;
  let client: AnyClient;

  beforeAll(async () => {
    if (transport === 'stdio') {
      const made = stdioClient(line);
      client = made.client;
      await (client as ClientV1).connect(made.transport as StdioClientV1);
    } else {
      ledger = await createLedger({ pglite: 'memory://', telemetry: false });
      const { url, server } = await httpServer(line, ledger);
      http = server;
      client =
        line === '1.x'
          ? new ClientV1({ name: 't', version: '1' })
          : new ClientV2({ name: 't', version: '1' });
      if (line === '1.x') await (client as ClientV1).connect(new HttpClientV1(url));
      else await (client as ClientV2).connect(new HttpClientV2(url));
    }
  });

  afterAll(async () => {
    await client?.close();
    await new Promise((resolve) => (http ? http.close(resolve) : resolve(undefined)));
    await ledger?.close();
  });

  const call = async (args: Record<string, unknown>, meta?: Record<string, unknown>) =>
    (await (client as ClientV1).callTool({
      name: 'create_note',
      arguments: args,
      ...(meta ? { _meta: meta } : {}),
    })) as Result;

  it('executes once and replays a retry with the same key, saying so', async () => {
    const first = await call({ text: 'hi', idempotency_key: 'note-1' });
    expect(first.structuredContent).toEqual({ note: 1, text: 'hi' });
    const again = await call({ text: 'hi', idempotency_key: 'note-1' });
    expect(again._meta?.[MCP_CALL_META_KEY]).toMatchObject({ outcome: 'replayed' });
    expect(again.content[0]!.text).toMatch(/^Replayed: create_note already did this request/);
    expect(again.structuredContent).toEqual({ note: 1, text: 'hi' });
  });

  it('takes the key from params._meta when the argument is missing', async () => {
    const first = await call({ text: 'meta' }, { [MCP_KEY_META_KEY]: 'note-meta-1' });
    expect(first._meta?.[MCP_CALL_META_KEY]).toMatchObject({ outcome: 'executed' });
    const again = await call({ text: 'meta' }, { [MCP_KEY_META_KEY]: 'note-meta-1' });
    expect(again._meta?.[MCP_CALL_META_KEY]).toMatchObject({ outcome: 'replayed' });
    const none = await call({ text: 'meta' });
    expect(none._meta?.[MCP_ERROR_META_KEY]).toMatchObject({ code: 'KEY_REQUIRED' });
  });

  it('refuses a huge key before any ledger work', async () => {
    const result = await call({ text: 'x', idempotency_key: 'k'.repeat(100_000) });
    expect(result._meta?.[MCP_ERROR_META_KEY]).toMatchObject({ code: 'KEY_INVALID' });
  });

  it('tells the resolvers which SDK line and transport delivered the call', async () => {
    await call({ text: 'seen', idempotency_key: 'note-seen' });
    const seen = (await (client as ClientV1).callTool({ name: 'last_request', arguments: {} })) as Result;
    const last = JSON.parse(seen.content[0]!.text!);
    expect(last).toMatchObject({
      sdk: line === '1.x' ? 1 : 2,
      transport: network,
    });
    // Over HTTP the client names the negotiated revision in every request's MCP-Protocol-Version header, which
    // becomes the span's mcp.protocol.version; stdio carries none in these SDK versions.
    if (network === 'tcp') expect(last.protocolVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });
});

describe.each(['1.x', '2.x'] as const)('outputSchema on MCP SDK %s', (line) => {
  it('publishes the output validator as outputSchema and refuses a value that breaks it', async () => {
    const { InMemoryTransport: MemoryV1 } = await import('@modelcontextprotocol/sdk/inMemory.js');
    const { McpServer: ServerV1 } = await import('@modelcontextprotocol/sdk/server/mcp.js');
    const { InMemoryTransport: MemoryV2, McpServer: ServerV2 } = await import('@modelcontextprotocol/server');
    const z = await import('zod');
    const { registerMcpTool } = await import('../../src/integrations/mcp/index.js');
    const ledger = await createLedger({ pglite: 'memory://', telemetry: false });
    const quote = ledger.tool({
      name: 'quote',
      kind: 'mutation',
      input: z.object({ cents: z.number() }),
      // A negative amount stands for a handler that breaks its promise.
      handler: async ({ cents }) => ({ totalCents: cents, currency: cents < 0 ? 7 : 'EUR' }),
    });
    const output = z.object({ totalCents: z.number(), currency: z.string() });
    let client: AnyClient;
    if (line === '1.x') {
      const server = new ServerV1({ name: 'o', version: '1' });
      registerMcpTool(server, quote, { output });
      const [a, b] = MemoryV1.createLinkedPair();
      await server.connect(b);
      client = new ClientV1({ name: 't', version: '1' });
      await client.connect(a);
    } else {
      const server = new ServerV2({ name: 'o', version: '1' });
      registerMcpTool(server, quote, { output });
      const [a, b] = MemoryV2.createLinkedPair();
      await server.connect(b);
      client = new ClientV2({ name: 't', version: '1' });
      await client.connect(a);
    }
    const { tools } = await (client as ClientV1).listTools();
    expect(tools[0]!.outputSchema).toMatchObject({
      type: 'object',
      properties: { totalCents: { type: 'number' }, currency: { type: 'string' } },
      required: ['totalCents', 'currency'],
    });
    const good = (await (client as ClientV1).callTool({
      name: 'quote',
      arguments: { cents: 5, idempotency_key: 'q-1' },
    })) as Result;
    expect(good.structuredContent).toEqual({ totalCents: 5, currency: 'EUR' });
    const bad = (await (client as ClientV1).callTool({
      name: 'quote',
      arguments: { cents: -1, idempotency_key: 'q-2' },
    })) as Result & { isError?: boolean };
    expect(bad.isError).toBe(true);
    expect(bad._meta?.[MCP_ERROR_META_KEY]).toMatchObject({ code: 'RESULT_INVALID' });
    // No structuredContent on errors of a tool with an outputSchema: clients check it against the schema.
    expect(bad.structuredContent).toBeUndefined();
    await client.close();
    await ledger.close();
  });
});
