// An HTTP upstream (--upstream URL) dies mid-call: the request was sent and no answer came, so the outcome is
// unknown. The gateway notices the lost connection (the response stream breaks, a ping finds nobody) and ends the
// call as OUTCOME_UNKNOWN at once, not at the tool's timeout, which the config sets far beyond the test's own.
// A retry with the same key, once the server is back, is not sent again (onUnknown 'fail', the default). The
// upstream is the npm "everything" server over Streamable HTTP, killed with SIGKILL.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Child,
  callWithProgress,
  EVERYTHING_SERVER,
  errorCode,
  eventually,
  freePort,
  gatewaySuite,
  httpClient,
  httpGateway,
  LINES,
  spawnUntil,
  tempDir,
  texts,
} from './support.js';

const suite = gatewaySuite('crash_http');
const dir = tempDir('crash-http');
const config = join(dir, 'gateway.json');
// The long-running tool (read-only by its annotations) as a mutation, with a timeout no test waits for.
writeFileSync(
  config,
  JSON.stringify({ tools: { 'trigger-long-running-operation': { kind: 'mutation', timeoutSeconds: 3600 } } }),
);
let port: number;
let upstream: Child | undefined;
let gateway: Child & { readonly url: URL };

const startUpstream = async () => {
  upstream = await spawnUntil(process.execPath, [EVERYTHING_SERVER, 'streamableHttp'], /listening on port/, {
    PORT: String(port),
  });
};
const killUpstream = async () => {
  const child = upstream?.process;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
};

beforeAll(async () => {
  port = await freePort();
  await startUpstream();
  gateway = await suite.child(
    httpGateway([...suite.ledgerArgs(), '--config', config, '--upstream', `http://127.0.0.1:${port}/mcp`]),
  );
});
afterAll(killUpstream);

const rows = (key: string) => suite.runs(key);

describe.each(LINES)('an HTTP upstream crash mid-call, MCP SDK %s client', (line) => {
  const key = `long-http-${line}`;
  const params = {
    name: 'trigger-long-running-operation',
    arguments: { duration: 600, steps: 600, idempotency_key: key },
  };

  beforeAll(async () => {
    if (upstream?.process.exitCode !== null || upstream.process.signalCode !== null) await startUpstream();
  });

  it('ends the call as OUTCOME_UNKNOWN once the connection is lost, and never re-sends on retry', async () => {
    const client = await httpClient(line, gateway.url);
    await suite.client(client);
    let progressed = 0;
    const pending = callWithProgress(line, client, params, () => void progressed++, 3_600_000);
    // A progress notification proves the request reached the server and is running.
    await eventually(() => progressed > 0);
    await killUpstream();
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(errorCode(result)).toBe('OUTCOME_UNKNOWN');
    expect(texts(result)).toMatch(/^OUTCOME_UNKNOWN: .*not known whether it took effect/);
    expect(await rows(key)).toEqual([{ status: 'unknown', attempt: 1 }]);

    // The server is back; a new session's retry is answered from the ledger and not sent.
    await startUpstream();
    const next = await httpClient(line, gateway.url);
    await suite.client(next);
    let resent = 0;
    const retry = await callWithProgress(line, next, params, () => void resent++, 3_600_000);
    expect(errorCode(retry)).toBe('OUTCOME_UNKNOWN');
    expect(resent).toBe(0);
    expect(await rows(key)).toEqual([{ status: 'unknown', attempt: 1 }]);
  });

  it('answers a relayed request with an error when the upstream is gone', async () => {
    const client = await httpClient(line, gateway.url);
    await suite.client(client);
    expect((await client.listResources()).resources.length).toBeGreaterThan(0);
    await killUpstream();
    await expect(client.listResources()).rejects.toThrow();
  });
});
