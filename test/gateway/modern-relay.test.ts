// What the gateway relays to clients of the 2026-07-28 revision besides results, over the one upstream connection
// its sessionless requests share: progress notifications, on each request's own response stream under the
// client's own token (two clients' tokens collide on the shared connection unless the gateway renames them), and
// list changes, which make the gateway read the annotations again and reach the clients listening through
// subscriptions/listen. Real servers from npm (everything) and the probe fixture, SDK 2.x clients pinned to
// 2026-07-28.
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpClientV2,
} from '@modelcontextprotocol/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { type RunningGateway, startGateway } from '../../src/gateway/index.js';
import {
  type AnyClient,
  callTool,
  callWithProgress,
  databaseUrl,
  EVERYTHING_SERVER,
  errorCode,
  eventually,
  gatewaySuite,
  outcome,
  ROOT,
  texts,
} from './support.js';

const suite = gatewaySuite('modern_relay');
let everything: RunningGateway;
let probe: RunningGateway;

const start = (upstream: { command: string; args: string[] }, tools = {}) =>
  suite.onClose(
    startGateway({
      upstream,
      ledger: { connectionString: databaseUrl(), schema: suite.schema },
      listen: { host: '127.0.0.1', port: 0 },
      tenant: 'acme',
      tools,
      log: () => {},
    }),
  );

async function modernClient(gateway: RunningGateway): Promise<ClientV2> {
  const client = new ClientV2(
    { name: 'modern-relay-test', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new HttpClientV2(gateway.url as URL));
  return suite.client(client);
}

beforeAll(async () => {
  // The long operation is annotated read-only; as a mutation its progress comes through the ledger's path too.
  everything = await start(
    { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] },
    { 'trigger-long-running-operation': { kind: 'mutation' } },
  );
  probe = await start({
    command: process.execPath,
    args: [`${ROOT}/test/gateway/fixtures/probe-server.mjs`],
  });
});

describe('progress on the sessionless revision', () => {
  it("reaches each client's own request under its own token, two clients at once", async () => {
    const clients = [await modernClient(everything), await modernClient(everything)];
    const seen: Array<Array<{ progress: number; total?: number }>> = [[], []];
    const results = await Promise.all(
      clients.map((client, i) =>
        callWithProgress(
          '2.x',
          client as unknown as AnyClient,
          {
            name: 'trigger-long-running-operation',
            arguments: { duration: 1, steps: 4, idempotency_key: `progress-${i}` },
          },
          ((p: { progress: number; total?: number }) => void seen[i]?.push(p)) as () => void,
          60_000,
        ),
      ),
    );
    for (const [i, result] of results.entries()) {
      expect(result.isError).toBeFalsy();
      expect(outcome(result)).toBe('executed');
      // Every step once, in order, to the client that asked: none lost to the other client, none doubled.
      expect(seen[i]?.map((p) => p.progress)).toEqual([1, 2, 3, 4]);
      expect(seen[i]?.every((p) => p.total === 4)).toBe(true);
    }
  });

  it('answers a call without a progress token with no notifications and the same result', async () => {
    const client = await modernClient(everything);
    const result = await callTool(client as unknown as AnyClient, 'trigger-long-running-operation', {
      duration: 0.2,
      steps: 2,
      idempotency_key: 'progress-none',
    });
    expect(outcome(result)).toBe('executed');
    expect(texts(result)).toMatch(/Long running operation completed/);
  });
});

describe('list changes on the sessionless revision', () => {
  it('tells a subscriptions/listen client and reads the annotations again', async () => {
    const listener = await modernClient(probe);
    let changed = 0;
    listener.setNotificationHandler('notifications/tools/list_changed', () => {
      changed++;
    });
    const subscription = await listener.listen({ toolsListChanged: true });
    const caller = (await modernClient(probe)) as unknown as AnyClient;
    // Unannotated, so a mutation: refused without a key.
    expect(errorCode(await callTool(caller, 'switchable', {}))).toBe('KEY_REQUIRED');
    expect(outcome(await callTool(caller, 'make_read_only', { idempotency_key: 'flip-modern' }))).toBe(
      'executed',
    );
    await eventually(() => changed > 0, 100, 50);
    // No tools/list from this client: the gateway read the annotations again on the upstream's notification.
    const after = await callTool(caller, 'switchable', {});
    expect(after.isError).toBeFalsy();
    expect(texts(after)).toMatch(/^switchable call \d+$/);
    await subscription.close();
  });
});

describe('requests of the upstream to the client on the sessionless revision', () => {
  it('answers sampling at once as not relayed, so the upstream does not wait out its timeout', async () => {
    const client = (await modernClient(probe)) as unknown as AnyClient;
    const result = await callTool(client, 'ask_client', { idempotency_key: 'ask-modern' });
    // The tool saw the gateway's refusal and said so; the ledger recorded its answer.
    expect(texts(result)).toMatch(
      /asking failed: .*sampling\/createMessage is not relayed to clients of the 2026-07-28 revision/,
    );
  });
});
