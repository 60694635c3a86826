// HTTP session hygiene: a client that goes quiet without ending its session (no DELETE) does not hold its
// upstream forever. After --session-idle-timeout without a request, the gateway closes the session and the
// server it spawned for it exits; the client's next request is refused (404) and a new session works.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, expect, it } from 'vitest';
import { resolveSessionIdleTimeoutMs } from '../../src/config/gateway.js';
import {
  type Child,
  EVERYTHING_SERVER,
  eventually,
  gatewaySuite,
  httpClient,
  httpGateway,
  tempDir,
} from './support.js';

const suite = gatewaySuite('idle');
const dir = tempDir('idle');
const pidFile = join(dir, 'upstream.pids');
let gateway: Child & { readonly url: URL };

beforeAll(async () => {
  // Each session spawns its own server; the shell appends its pid, then becomes the server (exec).
  gateway = await suite.child(
    httpGateway([
      ...suite.ledgerArgs(),
      '--session-idle-timeout',
      '1000',
      '--',
      '/bin/sh',
      '-c',
      `echo $$ >> '${pidFile}'; exec '${process.execPath}' '${EVERYTHING_SERVER}' stdio`,
    ]),
  );
});

const pids = () => {
  try {
    return readFileSync(pidFile, 'utf8').trim().split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('closes an idle HTTP session and releases its upstream', async () => {
  // The gateway spawned the server once at start, to check the command; that one has exited.
  const before = pids().length;
  const client = await httpClient('1.x', gateway.url);
  await suite.client(client);
  await client.ping();
  await eventually(() => pids().length === before + 1);
  const upstream = pids()[before] as number;
  // Nothing more from the client: the session times out and its server exits.
  await eventually(() => !alive(upstream));
  expect(gateway.stderr()).toMatch(/closing session \S+, idle for/);
  await expect(client.ping()).rejects.toThrow();

  const fresh = await httpClient('2.x', gateway.url);
  await suite.client(fresh);
  const { tools } = await fresh.listTools();
  expect(tools.length).toBeGreaterThan(0);
});

it('defaults to 2 minutes; 0 keeps idle sessions; a negative or fractional value is refused', () => {
  expect(resolveSessionIdleTimeoutMs(undefined)).toBe(120_000);
  expect(resolveSessionIdleTimeoutMs(0)).toBe(0);
  expect(() => resolveSessionIdleTimeoutMs(-1)).toThrow(/sessionIdleTimeoutMs must be a whole number/);
  expect(() => resolveSessionIdleTimeoutMs(1.5)).toThrow(/sessionIdleTimeoutMs/);
});
