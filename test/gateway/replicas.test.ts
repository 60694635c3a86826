// Gateway replicas sharing one ledger behind a round-robin proxy (test/support/round-robin-proxy.ts), each a real
// `tool-ledger gateway` process: the same call sent to two replicas at once runs once; a retry that lands on
// another replica replays; a replica killed mid-call leaves the outcome unknown under the usual rules (the lease
// lapses, the rule is 'fail') and the call never runs twice.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { type RoundRobinProxy, roundRobinProxy } from '../support/round-robin-proxy.js';
import {
  type AnyClient,
  type Child,
  callTool,
  callWithProgress,
  EVERYTHING_SERVER,
  errorCode,
  eventually,
  FILESYSTEM_SERVER,
  gatewaySuite,
  httpClient,
  httpGateway,
  outcome,
  type ToolResult,
  tempDir,
} from './support.js';

const suite = gatewaySuite('fleet');
const dir = tempDir('fleet');
let files: { replicas: (Child & { url: URL })[]; proxy: RoundRobinProxy };
let slow: { replicas: (Child & { url: URL })[]; proxy: RoundRobinProxy };

async function fleet(count: number, upstream: string[], extra: string[] = []) {
  const replicas: (Child & { url: URL })[] = [];
  for (let i = 0; i < count; i++) {
    const replica = await httpGateway([
      ...suite.ledgerArgs(),
      '--tenant',
      'acme',
      ...extra,
      '--',
      ...upstream,
    ]);
    replicas.push(replica);
    await suite.child(replica);
  }
  return { replicas, proxy: await suite.onClose(roundRobinProxy(replicas.map((r) => r.url))) };
}

async function client(url: URL): Promise<AnyClient> {
  const c = await httpClient('1.x', url);
  await suite.client(c);
  return c;
}

beforeAll(async () => {
  files = await fleet(2, [process.execPath, FILESYSTEM_SERVER, dir]);
  // The long operation as a mutation with a short lease, so a killed replica's call is found out quickly.
  const config = join(dir, 'slow.json');
  writeFileSync(
    config,
    JSON.stringify({
      tools: {
        'trigger-long-running-operation': { kind: 'mutation', leaseSeconds: 2, waitSeconds: 1 },
      },
    }),
  );
  slow = await fleet(2, [process.execPath, EVERYTHING_SERVER, 'stdio'], ['--config', config]);
});

const runs = (key: string) => suite.runs(key);

describe('replicas on one ledger', () => {
  it('runs the same call sent to two replicas at once once', async () => {
    const first = files.proxy.placements.length;
    const [a, b] = [await client(files.proxy.url), await client(files.proxy.url)];
    expect(new Set(files.proxy.placements.slice(first))).toEqual(new Set([0, 1]));
    writeFileSync(join(dir, 'both.txt'), 'once');
    const args = {
      source: join(dir, 'both.txt'),
      destination: join(dir, 'both-moved.txt'),
      idempotency_key: 'fleet-dup',
    };
    const answers = await Promise.all([
      callTool(a as AnyClient, 'move_file', args),
      callTool(b as AnyClient, 'move_file', args),
    ]);
    expect(answers.map((r) => r.isError ?? false)).toEqual([false, false]);
    expect(answers.map(outcome).sort()).toEqual(['executed', 'replayed']);
    expect(existsSync(join(dir, 'both.txt'))).toBe(false);
    expect(readFileSync(join(dir, 'both-moved.txt'), 'utf8')).toBe('once');
    expect(await runs('fleet-dup')).toEqual([{ status: 'succeeded', attempt: 1 }]);
  });

  it('replays a retry that lands on another replica', async () => {
    const first = files.proxy.placements.length;
    const a = await client(files.proxy.url);
    const b = await client(files.proxy.url);
    expect(files.proxy.placements[first]).not.toBe(files.proxy.placements[first + 1]);
    const args = { path: join(dir, 'made-once'), idempotency_key: 'fleet-retry' };
    expect(outcome(await callTool(a, 'create_directory', args))).toBe('executed');
    const again = await callTool(b, 'create_directory', args);
    expect(outcome(again)).toBe('replayed');
    expect(await runs('fleet-retry')).toEqual([{ status: 'succeeded', attempt: 1 }]);
  });

  it('leaves the outcome unknown when the replica running a call is killed, and never runs it twice', async () => {
    const first = slow.proxy.placements.length;
    const doomed = await client(slow.proxy.url);
    const victim = slow.replicas[slow.proxy.placements[first] as number] as Child;
    const args = { duration: 5, steps: 5, idempotency_key: 'fleet-killed' };
    const cut = callTool(doomed, 'trigger-long-running-operation', args).catch((error: unknown) => error);
    await eventually(async () => (await runs('fleet-killed')).length === 1);
    victim.process.kill('SIGKILL');
    expect(await cut).toBeInstanceOf(Error);

    // A retry, through the proxy, reaches the surviving replica: first the row is still held (IN_PROGRESS), then
    // its lease lapses and the rule 'fail' answers OUTCOME_UNKNOWN. It is not run again.
    const survivor = await client(slow.proxy.url);
    let last: ToolResult | undefined;
    for (let attempt = 0; attempt < 40; attempt++) {
      last = await callTool(survivor, 'trigger-long-running-operation', args);
      if (errorCode(last) !== 'IN_PROGRESS') break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(errorCode(last as ToolResult)).toBe('OUTCOME_UNKNOWN');
    // The takeover (attempt 2) found the first attempt interrupted and ran nothing: the row waits for an operator,
    // and every later call with the key answers the same.
    expect(await runs('fleet-killed')).toEqual([{ status: 'unknown', attempt: 2 }]);
    expect(errorCode(await callTool(survivor, 'trigger-long-running-operation', args))).toBe(
      'OUTCOME_UNKNOWN',
    );
  });

  it('drains a replica during load: every call lands once, on a replica that serves it', async () => {
    const keys = Array.from({ length: 12 }, (_, i) => `fleet-load-${i}`);
    const once = async (key: string): Promise<unknown> => {
      // A client whose session was on the draining replica sees its request refused (503) or its connection
      // closed; it opens a new session through the proxy, which the surviving replica takes, and retries the key.
      for (let attempt = 0; attempt < 10; attempt++) {
        try {
          const c = await client(files.proxy.url);
          // Bounded per attempt: a request caught on the replica as it exits is retried, not waited on for the
          // SDK's default minute.
          const result = await callWithProgress(
            '1.x',
            c,
            { name: 'create_directory', arguments: { path: join(dir, key), idempotency_key: key } },
            () => {},
            10_000,
          );
          if (!result.isError) return outcome(result);
        } catch {}
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return 'gave up';
    };
    const load = Promise.all(
      keys.map((key, i) => new Promise((r) => setTimeout(r, i * 50)).then(() => once(key))),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    const draining = files.replicas[0] as Child;
    const exited = new Promise((resolve) => draining.process.once('exit', resolve));
    draining.process.kill('SIGTERM');
    const outcomes = await load;
    expect(await exited).toBe(0);
    expect(outcomes.every((o) => o === 'executed' || o === 'replayed')).toBe(true);
    for (const key of keys) {
      expect(existsSync(join(dir, key))).toBe(true);
      expect(await runs(key)).toEqual([{ status: 'succeeded', attempt: 1 }]);
    }
    // Twelve clients, each with a new session per attempt, on two cores shared with other suites: slow, never unbounded.
  }, 150_000);
});
