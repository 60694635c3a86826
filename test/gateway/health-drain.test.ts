// What an orchestrator sees of a gateway: /healthz and /readyz, a request body over the bound (413), a start that
// fails plainly (a missing upstream command, an empty tenant), and SIGTERM: the gateway stops accepting, answers
// the call in flight, and exits within its drain bound. The settings come from the command line, as in a fleet.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { GATEWAY_DEFAULTS, resolveGatewaySettings } from '../../src/config/gateway.js';
import {
  type Child,
  callTool,
  cliDatabaseUrl,
  EVERYTHING_SERVER,
  eventually,
  freePort,
  gatewayCommand,
  gatewaySuite,
  httpClient,
  httpGateway,
  outcome,
  ROOT,
  spawnUntil,
  tempDir,
} from './support.js';

const suite = gatewaySuite('health');
const { db, schema } = suite;
let gateway: Child & { readonly url: URL };

const at = (url: URL, path: string) => new URL(path, url);

beforeAll(async () => {
  // The long operation is annotated read-only; the config makes it a mutation, so it goes through the ledger.
  const config = join(tempDir('health'), 'gateway.json');
  writeFileSync(
    config,
    JSON.stringify({ tools: { 'trigger-long-running-operation': { kind: 'mutation' } } }),
  );
  gateway = await suite.child(
    httpGateway([
      ...suite.ledgerArgs(),
      '--config',
      config,
      '--max-request-bytes',
      '2048',
      '--drain-timeout',
      '20000',
      '--',
      process.execPath,
      EVERYTHING_SERVER,
      'stdio',
    ]),
  );
});

/** Runs the CLI to its end; resolves with its exit code and output (bounded: the gateway must not start). */
function runToExit(args: string[]): Promise<{ code: number | null; output: string }> {
  const { command, args: full } = gatewayCommand(args);
  return new Promise((resolve, reject) => {
    const child = spawn(command, full, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c) => {
      output += String(c);
    });
    child.stderr.on('data', (c) => {
      output += String(c);
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the gateway did not exit:\n${output}`));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('health endpoints', () => {
  it('/healthz says the process serves; /readyz says it is ready, with its checks', async () => {
    const health = await fetch(at(gateway.url, '/healthz'));
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });
    const ready = await fetch(at(gateway.url, '/readyz'));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      status: 'ok',
      checks: { ledger: 'open', upstream: 'command starts' },
    });
  });

  it('/readyz says not ready while an HTTP upstream does not answer, and ready once it does', async () => {
    const port = await freePort();
    const waiting = await httpGateway([...suite.ledgerArgs(), '--upstream', `http://127.0.0.1:${port}/mcp`]);
    let upstream: Child | undefined;
    try {
      expect(waiting.stderr()).toMatch(/does not answer yet; \/readyz says not ready/);
      const down = await fetch(at(waiting.url, '/readyz'));
      expect(down.status).toBe(503);
      expect(await down.json()).toMatchObject({
        status: 'unavailable',
        checks: { upstream: 'does not answer' },
      });
      upstream = await spawnUntil(
        process.execPath,
        [EVERYTHING_SERVER, 'streamableHttp'],
        /listening on port/,
        {
          PORT: String(port),
        },
      );
      await eventually(async () => (await fetch(at(waiting.url, '/readyz'))).status === 200, 100, 200);
    } finally {
      await waiting.stop();
      await upstream?.stop();
    }
  });
});

describe('bounds and start-up', () => {
  it('answers a request body over --max-request-bytes with 413, before reading it as MCP', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { padding: 'x'.repeat(4096) },
    });
    const response = await fetch(gateway.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: big,
    });
    expect(response.status).toBe(413);
    expect(JSON.stringify(await response.json())).toMatch(/larger than this gateway takes \(2048 bytes\)/);
    // The gateway still serves.
    const client = await httpClient('1.x', gateway.url);
    await suite.client(client);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  });

  it('fails at start, exit code 1 and no stack trace, when the upstream command does not exist', async () => {
    for (const listen of [[], ['--listen', '127.0.0.1:0']]) {
      const { code, output } = await runToExit([
        ...suite.ledgerArgs(),
        ...listen,
        '--',
        '/nonexistent/mcp-server',
      ]);
      expect(code).toBe(1);
      expect(output).toMatch(
        /"\/nonexistent\/mcp-server" could not be started .*not found: check the command after --/,
      );
      expect(output).not.toMatch(/unexpected error|\n\s+at /);
      expect(output).not.toMatch(/serving MCP/);
    }
  });

  it('refuses an empty --tenant at start (exit 2), pointing to gateway --help', async () => {
    const { code, output } = await runToExit([
      '--database-url',
      cliDatabaseUrl(),
      '--tenant',
      '',
      '--',
      process.execPath,
      EVERYTHING_SERVER,
      'stdio',
    ]);
    expect(code).toBe(2);
    expect(output).toMatch(/--tenant is empty/);
    expect(output).toMatch(/tool-ledger gateway --help/);
  });

  it('documents its defaults and refuses a setting out of bounds', () => {
    expect(resolveGatewaySettings()).toEqual(GATEWAY_DEFAULTS);
    expect(GATEWAY_DEFAULTS).toMatchObject({
      upstreamPingIntervalMs: 15_000,
      sessionIdleTimeoutMs: 120_000,
      upstreamCallTimeoutMs: 60_000,
      drainTimeoutMs: 15_000,
    });
    expect(Object.isFrozen(resolveGatewaySettings({ drainTimeoutMs: 0 }))).toBe(true);
    expect(() => resolveGatewaySettings({ upstreamPingTimeoutMs: 0 })).toThrow(
      /upstreamPingTimeoutMs must be/,
    );
    expect(() => resolveGatewaySettings({ pingInterval: 1 } as never)).toThrow(/no option "pingInterval"/);
  });
});

describe('SIGTERM', () => {
  it('stops accepting, answers the call in flight, and exits within the drain bound', async () => {
    const client = await httpClient('1.x', gateway.url);
    await suite.client(client);
    const running = callTool(client, 'trigger-long-running-operation', {
      duration: 2,
      steps: 2,
      idempotency_key: 'drain-1',
    });
    // The call is in the ledger (running) before the signal.
    await eventually(
      async () =>
        (
          await db
            .sql(`SELECT 1 FROM "${schema}".tool_runs WHERE idempotency_key = $1`, ['drain-1'])
            .catch(() => [])
        ).length === 1,
    );
    const exited = new Promise<number | null>((resolve) => gateway.process.once('exit', resolve));
    gateway.process.kill('SIGTERM');
    await eventually(() => /stopping: draining the calls in flight/.test(gateway.stderr()));
    // New work is not accepted while it drains.
    const late = await fetch(at(gateway.url, '/readyz')).then(
      (r) => r.status,
      () => 'refused',
    );
    expect([503, 'refused']).toContain(late);
    expect(outcome(await running)).toBe('executed');
    expect(await exited).toBe(0);
    const rows = await db.sql<{ status: string }>(
      `SELECT status FROM "${schema}".tool_runs WHERE idempotency_key = $1`,
      ['drain-1'],
    );
    expect(rows.map((r) => r.status)).toEqual(['succeeded']);
  });
});
