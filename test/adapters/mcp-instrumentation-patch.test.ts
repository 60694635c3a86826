import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import * as mcp from '@modelcontextprotocol/sdk/server/mcp.js';
import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, type Ledger } from '../../src/index.js';
import { registerMcpTool } from '../../src/integrations/mcp/index.js';
import { ToolLedgerMcpInstrumentation } from '../../src/integrations/mcp-instrumentation/index.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';

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
    expect(spanNames()).toEqual(['execute_tool first', 'execute_tool renamed', 'execute_tool ledgered']);
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
    expect(spanNames()).toEqual(['execute_tool quiet']);
    await client.close();
  });
});
