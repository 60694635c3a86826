// A call that reaches a session while it closes (its HTTP upstream just died, and the gateway noticed first) is
// answered, never left waiting: it cannot reach the upstream, so it is a retryable TOOL_FAILED whose row is not
// final, and the client side closes only after that answer went out. The session is built in this process so the
// test can hold its close at the moment between the upstream side and the client side; the upstream is the npm
// "everything" server over the SDK's real Streamable HTTP client transport, the client the SDK's in-memory pair.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { beforeAll, expect, it } from 'vitest';
import { resolveGatewaySettings } from '../../src/config/gateway.js';
import { createLedger, type Ledger } from '../../src/create-ledger.js';
import { ToolCatalog } from '../../src/gateway/catalog.js';
import { Gate } from '../../src/gateway/gate.js';
import { GatewaySession } from '../../src/gateway/session.js';
import { ToolLabels } from '../../src/gateway/tool-labels.js';
import type { GatewayTransport } from '../../src/gateway/types.js';
import {
  type Child,
  callTool,
  databaseUrl,
  errorCode,
  gatewaySuite,
  httpUpstream,
  outcome,
  type ToolResult,
  texts,
} from './support.js';

const suite = gatewaySuite('closing');
const { db, schema } = suite;
let upstreamServer: Child & { url: URL };
let ledger: Ledger;

beforeAll(async () => {
  ledger = await suite.onClose(createLedger({ connectionString: databaseUrl(), schema }));
  upstreamServer = await suite.child(httpUpstream());
});

/** Settles `promise`, or rejects after `ms` (a bound on a wait, not a timing assertion). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not happen within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

it('answers a call that arrives while the session closes, before the client side closes', async () => {
  const real = new StreamableHTTPClientTransport(upstreamServer.url) as unknown as GatewayTransport;
  let closeReached!: () => void;
  const reached = new Promise<void>((resolve) => {
    closeReached = resolve;
  });
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  // The real transport, except that its close waits for the test: the session is then past its first drain.
  const upstream: GatewayTransport = {
    start: () => real.start(),
    send: (message, options) => real.send(message, options),
    close: async () => {
      closeReached();
      await released;
      await real.close();
    },
    set onmessage(handler: GatewayTransport['onmessage']) {
      real.onmessage = handler;
    },
    set onclose(handler: GatewayTransport['onclose']) {
      real.onclose = handler;
    },
    set onerror(handler: GatewayTransport['onerror']) {
      real.onerror = handler;
    },
  };
  const [clientSide, gatewaySide] = InMemoryTransport.createLinkedPair();
  let clientSideClosed = false;
  const downstream = gatewaySide as unknown as GatewayTransport;
  const log: string[] = [];
  const session = new GatewaySession(
    {
      ledger,
      catalog: new ToolCatalog({ keyField: 'idempotency_key', tools: {}, defaults: {}, log: () => {} }),
      keyField: 'idempotency_key',
      network: 'tcp',
      pingUpstream: true,
      log: (line) => log.push(line),
      settings: resolveGatewaySettings(),
      gate: new Gate(undefined, undefined, new ToolLabels([])),
      startUpstream: (transport) => transport.start(),
      identity: () => ({ tenant: 'acme', user: undefined }),
    },
    downstream,
    upstream,
  );
  await session.start();
  const client = new Client({ name: 'closing-test', version: '1' });
  await client.connect(clientSide);
  client.onclose = () => {
    clientSideClosed = true;
  };
  expect(outcome(await callTool(client, 'toggle-simulated-logging', { idempotency_key: 'up-1' }))).toBe(
    'executed',
  );

  await upstreamServer.stop();
  // The broken stream makes the session ping, find nobody, and close: it waits at the upstream side.
  await within(reached, 30_000, 'the session closing after its upstream died');
  const late = client.callTool(
    { name: 'toggle-simulated-logging', arguments: { idempotency_key: 'late-1' } },
    undefined,
    { timeout: 30_000 },
  ) as Promise<ToolResult>;
  // Lets the close go on while the call is in flight (it has reached the session, not finished).
  setImmediate(release);
  const answer = await late;
  expect(answer.isError).toBe(true);
  expect(errorCode(answer)).toBe('TOOL_FAILED');
  expect(answer._meta?.['tool-ledger/error']).toMatchObject({ retryable: true });
  expect(texts(answer)).toMatch(
    /nothing was recorded as done\. You may call toggle-simulated-logging again with the same arguments and the same "idempotency_key"/,
  );
  await within(session.closed, 30_000, 'the session closing');
  expect(clientSideClosed).toBe(true);
  const rows = await db.sql<{ status: string; final: boolean }>(
    `SELECT status, final FROM "${schema}".tool_runs WHERE idempotency_key = 'late-1'`,
  );
  expect(rows).toEqual([{ status: 'failed', final: false }]);
  expect(log.join('\n')).toMatch(/the upstream MCP server cannot be reached/);
});
