import { context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { createLedger, type Ledger } from '../../src/index.js';
import { withCallAttributes } from '../../src/integrations/shared/call-attributes.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';

const harness = new TelemetryHarness();
let ledger: Ledger;

beforeAll(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  ledger = await createLedger({ pglite: 'memory://', telemetry: harness.providers() });
});

afterAll(async () => {
  await ledger?.close();
  await harness.shutdown();
  context.disable();
});

describe('adapter call attributes on the ledger span', () => {
  it('land on the one execute_tool span and its log record, never overriding the ledger’s own', async () => {
    const tool = ledger.tool({ name: 'ping', kind: 'mutation', input: z.object({}), handler: () => 'pong' });
    await withCallAttributes(
      { 'mcp.session.id': 's-1', 'gen_ai.tool.name': 'spoofed', 'bad.value': {} as never },
      () => withCallAttributes({ 'jsonrpc.request.id': '9' }, () => tool.call({}, { key: 'k-1' })),
    );
    const spans = harness.finishedSpans();
    expect(spans).toHaveLength(1);
    expect(spans[0]!.attributes).toMatchObject({
      'mcp.session.id': 's-1',
      'jsonrpc.request.id': '9',
      'gen_ai.tool.name': 'ping',
    });
    expect(spans[0]!.attributes).not.toHaveProperty('bad.value');
    expect(harness.logRecords()[0]!.attributes).toMatchObject({ 'mcp.session.id': 's-1' });
  });

  it('stay out of calls started outside the scope', async () => {
    const tool = ledger.tool({ name: 'pong', kind: 'read', handler: () => 'ping' });
    await tool.call(undefined);
    const span = harness.finishedSpans().find((s) => s.name === 'execute_tool pong')!;
    expect(span.attributes).not.toHaveProperty('mcp.session.id');
  });
});
