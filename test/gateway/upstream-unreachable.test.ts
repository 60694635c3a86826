// An HTTP upstream that cannot be reached any more (its server is gone: connection refused). The gateway notices
// the broken stream, finds nobody on a ping and ends the client's session: the client's next request gets HTTP 404
// at once (MCP: start a new session), a new session cannot start while the upstream is down, and nothing is
// saved for a call that never reached the gateway. A call that reaches a session while it ends is answered as a
// retryable TOOL_FAILED (closing-session.test.ts holds the session at that moment).
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type AnyClient,
  type Child,
  callTool,
  eventually,
  gatewaySuite,
  httpClient,
  httpGateway,
  httpUpstream,
  outcome,
} from './support.js';

const suite = gatewaySuite('down');
const { db, schema } = suite;
let upstream: Child & { url: URL };
let gateway: Child & { url: URL };
let client: AnyClient;

beforeAll(async () => {
  upstream = await suite.child(httpUpstream());
  gateway = await suite.child(httpGateway([...suite.ledgerArgs(), '--upstream', upstream.url.href]));
  client = await suite.client(httpClient('1.x', gateway.url));
});

describe('an upstream that cannot be reached', () => {
  it('ends the session (404 for its next request), refuses new sessions at once, and saves nothing', async () => {
    expect(outcome(await callTool(client, 'toggle-simulated-logging', { idempotency_key: 'up-1' }))).toBe(
      'executed',
    );
    await upstream.stop();
    await eventually(() => /the upstream MCP server closed the connection/.test(gateway.stderr()), 600, 50);
    expect(gateway.stderr()).toMatch(/the upstream MCP server cannot be reached/);

    const ended = client.callTool(
      { name: 'toggle-simulated-logging', arguments: { idempotency_key: 'down-1' } },
      undefined,
      { timeout: 30_000 },
    );
    await expect(ended).rejects.toMatchObject({
      code: 404,
      message: expect.stringMatching(/Session not found; initialize a new session/),
    });
    await expect(httpClient('1.x', gateway.url)).rejects.toThrow(
      /could not be sent to the upstream MCP server/,
    );

    const rows = await db.sql(`SELECT 1 FROM "${schema}".tool_runs WHERE idempotency_key = 'down-1'`);
    expect(rows).toEqual([]);
  });
});
