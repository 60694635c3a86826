// A request that never reached the upstream (its HTTP server is gone: connection refused) is a retryable failure:
// nothing happened, nothing final is saved, and the same key may run it later.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AnyClient,
  type Child,
  callTool,
  database,
  databaseUrl,
  EVERYTHING_SERVER,
  errorCode,
  freePort,
  httpClient,
  httpGateway,
  outcome,
  spawnUntil,
  texts,
} from './support.js';

const db = database();
const schema = `gw_down_${process.pid}`;
let upstream: Child;
let gateway: Child & { url: URL };
let client: AnyClient;

beforeAll(async () => {
  const port = await freePort();
  upstream = await spawnUntil(process.execPath, [EVERYTHING_SERVER, 'streamableHttp'], /listening on port/, {
    PORT: String(port),
  });
  gateway = await httpGateway([
    '--database-url',
    databaseUrl(),
    '--schema',
    schema,
    '--upstream',
    `http://127.0.0.1:${port}/mcp`,
  ]);
  client = await httpClient('1.x', gateway.url);
});
afterAll(async () => {
  await client?.close();
  await gateway?.stop();
  await upstream?.stop();
  await db.drop(schema);
  await db.end();
});

describe('an upstream that cannot be reached', () => {
  it('answers a retryable TOOL_FAILED and saves nothing final', async () => {
    expect(outcome(await callTool(client, 'toggle-simulated-logging', { idempotency_key: 'up-1' }))).toBe(
      'executed',
    );
    await upstream.stop();
    const down = await callTool(client, 'toggle-simulated-logging', { idempotency_key: 'down-1' });
    expect(down.isError).toBe(true);
    expect(errorCode(down)).toBe('TOOL_FAILED');
    expect(down._meta?.['tool-ledger/error']).toMatchObject({ retryable: true });
    expect(texts(down)).toMatch(
      /nothing was recorded as done\. You may call toggle-simulated-logging again with the same arguments and the same "idempotency_key"/,
    );
    const rows = await db.sql<{ status: string; final: boolean }>(
      `SELECT status, final FROM "${schema}".tool_runs WHERE idempotency_key = 'down-1'`,
    );
    // A non-final failure: the next call with this key runs again instead of replaying it.
    expect(rows).toEqual([{ status: 'failed', final: false }]);
  });
});
