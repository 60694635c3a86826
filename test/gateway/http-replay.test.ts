// The stdio suite's replay guarantees over Streamable HTTP, for clients of both SDK lines: parallel duplicates
// run once, the key also comes in _meta, and a new gateway process (after the first one stopped) still replays
// from the ledger. The upstream is the npm filesystem server, spawned per client session by the gateway's CLI.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Child,
  callTool,
  filesystemGatewayArgs,
  gatewaySuite,
  httpClient,
  httpGateway,
  LINES,
  outcome,
  tempDir,
} from './support.js';

const suite = gatewaySuite('http_replay');
const { schema } = suite;
const dir = tempDir('http-replay');
let gateway: Child & { readonly url: URL };
const start = () => suite.child(httpGateway(filesystemGatewayArgs(schema, dir)));

beforeAll(async () => {
  gateway = await start();
});

const connect = async (line: (typeof LINES)[number]) => {
  const client = await httpClient(line, gateway.url);
  await suite.client(client);
  return client;
};

describe.each(LINES)('replay over Streamable HTTP, MCP SDK %s client', (line) => {
  const tag = line.replace('.', '');

  it('runs parallel duplicates once', async () => {
    const client = await connect(line);
    writeFileSync(join(dir, `p${tag}.txt`), 'parallel');
    const args = {
      source: join(dir, `p${tag}.txt`),
      destination: join(dir, `p${tag}-moved.txt`),
      idempotency_key: `parallel-${tag}`,
    };
    const results = await Promise.all(Array.from({ length: 5 }, () => callTool(client, 'move_file', args)));
    expect(results.every((r) => !r.isError)).toBe(true);
    expect(results.map(outcome).sort()).toEqual(['executed', 'replayed', 'replayed', 'replayed', 'replayed']);
    expect(readFileSync(join(dir, `p${tag}-moved.txt`), 'utf8')).toBe('parallel');
    const rows = await suite.runs(`parallel-${tag}`);
    expect(rows).toEqual([{ status: 'succeeded', attempt: 1 }]);
  });

  it('takes the key from _meta["tool-ledger/idempotency-key"]', async () => {
    const client = await connect(line);
    writeFileSync(join(dir, `m${tag}.txt`), 'meta');
    const args = { source: join(dir, `m${tag}.txt`), destination: join(dir, `m${tag}-moved.txt`) };
    const meta = { 'tool-ledger/idempotency-key': `meta-${tag}` };
    expect(outcome(await callTool(client, 'move_file', args, meta))).toBe('executed');
    const again = await callTool(client, 'move_file', args, meta);
    expect(again.isError).toBeFalsy();
    expect(outcome(again)).toBe('replayed');
    expect(readFileSync(join(dir, `m${tag}-moved.txt`), 'utf8')).toBe('meta');
  });
});

it('still replays over HTTP from a new gateway process (the ledger is durable)', async () => {
  const client = await connect('1.x');
  writeFileSync(join(dir, 'r.txt'), 'restart');
  const args = {
    source: join(dir, 'r.txt'),
    destination: join(dir, 'r-moved.txt'),
    idempotency_key: 'restart',
  };
  expect(outcome(await callTool(client, 'move_file', args))).toBe('executed');
  await gateway.stop();
  gateway = await start();
  for (const line of LINES) {
    const fresh = await connect(line);
    const again = await callTool(fresh, 'move_file', args);
    expect(again.isError).toBeFalsy();
    expect(outcome(again)).toBe('replayed');
  }
  expect(readFileSync(join(dir, 'r-moved.txt'), 'utf8')).toBe('restart');
});
