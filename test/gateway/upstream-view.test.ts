// What reaches the upstream: never the key, in the argument or in _meta; and the client's trace context continues
// through the gateway's spans.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type AnyClient,
  callTool,
  errorCode,
  gatewayCommand,
  gatewaySuite,
  outcome,
  ROOT,
  stdioClient,
  texts,
} from './support.js';

const suite = gatewaySuite('probe');
let client: AnyClient;

beforeAll(async () => {
  client = await suite.client(
    stdioClient(
      '1.x',
      gatewayCommand([
        ...suite.ledgerArgs(),
        '--',
        process.execPath,
        join(ROOT, 'test/gateway/fixtures/probe-server.mjs'),
      ]),
    ),
  );
});

describe('what the upstream sees', () => {
  it('gets the arguments without idempotency_key and _meta without the key', async () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const result = await callTool(
      client,
      'record_args',
      { note: 'hi', idempotency_key: 'probe-1' },
      { 'tool-ledger/idempotency-key': 'ignored-when-the-argument-is-set', traceparent, other: 'kept' },
    );
    expect(outcome(result)).toBe('executed');
    const seen = result.structuredContent as { args: Record<string, unknown>; meta: Record<string, unknown> };
    expect(seen.args).toEqual({ note: 'hi' });
    expect(seen.meta).not.toHaveProperty('tool-ledger/idempotency-key');
    expect(seen.meta.other).toBe('kept');
    // No tracing SDK in this gateway process: the client's trace context passes on as it came.
    expect(seen.meta.traceparent).toBe(traceparent);
    expect(JSON.stringify(seen)).not.toContain('probe-1');
  });

  it('gets the key-less call once when the key came only in _meta', async () => {
    const meta = { 'tool-ledger/idempotency-key': 'probe-meta' };
    const first = await callTool(client, 'record_args', { note: 'm' }, meta);
    const again = await callTool(client, 'record_args', { note: 'm' }, meta);
    expect(outcome(again)).toBe('replayed');
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(JSON.stringify(first.structuredContent)).not.toContain('probe-meta');
  });

  it('reads the annotations again after tools/list_changed', async () => {
    const before = await callTool(client, 'switchable', {});
    expect(errorCode(before)).toBe('KEY_REQUIRED');
    await callTool(client, 'make_read_only', { idempotency_key: 'flip-1' });
    // No new tools/list from the client: the gateway lists the tools itself after the notification.
    const after = await callTool(client, 'switchable', {});
    expect(after.isError).toBeFalsy();
    expect(texts(after)).toMatch(/^switchable call \d+$/);
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'switchable')?.inputSchema.properties).not.toHaveProperty(
      'idempotency_key',
    );
  });
});
