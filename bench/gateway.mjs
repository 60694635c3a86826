// The latency tool-ledger gateway adds to one MCP tool call: the same calls once directly and once through
// `tool-ledger gateway`, over the same transport, with a real SDK 1.x client: over stdio to the npm filesystem
// server, and over Streamable HTTP to the npm everything server. Three kinds of call each: a read-only tool
// (relayed, telemetry only), a mutating tool with a new key each time (relayed and recorded in the ledger) and the
// same mutating call again (answered from the ledger, nothing sent upstream). Calls are sequential, so each figure
// is one call's round trip. The added latency is gateway minus direct, per percentile. The HTTP section runs twice
// through the gateway: an SDK 1.x client on the session-based revision, and an SDK 2.x client pinned to the
// sessionless 2026-07-28 revision. Then throughput: 8 concurrent clients making mutating calls with new keys, through
// 1, 2 and 4 gateway replicas on one ledger behind a per-request round-robin proxy (the sessionless revision), each
// as a ratio of the same load sent straight to the upstream. Before it all, the ledger's own first execution in
// this process (a tool whose handler does nothing), against which a new mutating key over stdio is weighed: it
// should add that plus the relay (the read-only call's added latency), and the bench prints what remains beyond.
// Run: npm run build && node bench/gateway.mjs   Env: DATABASE_URL (else an embedded Postgres), BENCH_CALLS (default 300)
import { mkdtempSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpClientV2,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import { createLedger } from '../dist/index.js';
import { startPostgres } from './postgres.mjs';
import { freePort, spawnReady } from './support/processes.mjs';

const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const WARMUP = Math.min(50, Math.ceil(CALLS / 5));
const postgres = await startPostgres();
// The gateways read it from the environment, as a user's would: a URL with a password (the embedded server's) is
// refused on the command line.
process.env.DATABASE_URL = postgres.url;
const root = fileURLToPath(new URL('..', import.meta.url));
const filesystem = join(root, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const everything = join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const cli = join(root, 'dist/cli/main.js');
const dir = mkdtempSync(join(tmpdir(), 'tl-gw-bench-'));
const schema = `bench_gateway_${process.pid}`;

async function connectStdio(args) {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(
    new StdioClientTransport({ command: process.execPath, args, stderr: 'ignore', env: process.env }),
  );
  return client;
}

async function connectModern(url) {
  const client = new ClientV2(
    { name: 'bench', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new HttpClientV2(new URL(url)));
  return client;
}

/** A loopback proxy sending each request to the next target in turn (the sessionless revision needs no pinning). */
async function roundRobin(targets) {
  let next = 0;
  const server = createHttpServer((req, res) => {
    const target = new URL(req.url ?? '/', targets[next]);
    next = (next + 1) % targets.length;
    const out = httpRequest(
      target,
      { method: req.method, headers: { ...req.headers, host: target.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => {
      res.writeHead(502);
      res.end();
    });
    req.pipe(out);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/mcp`,
    close: () => new Promise((r) => server.close(r)),
  };
}

const THROUGHPUT_CLIENTS = 8;
const THROUGHPUT_CALLS = Number(process.env.BENCH_THROUGHPUT_CALLS ?? 400);

/** Calls per second of THROUGHPUT_CLIENTS clients sharing THROUGHPUT_CALLS mutating calls with new keys. */
async function throughput(connect, tag) {
  const pool = [];
  for (let i = 0; i < THROUGHPUT_CLIENTS; i++) pool.push(await connect());
  for (const client of pool) clients.add(client);
  let issued = 0;
  const t0 = performance.now();
  await Promise.all(
    pool.map(async (client) => {
      while (issued < THROUGHPUT_CALLS) {
        const i = issued++;
        const result = await client.callTool(gzip(`t${tag}-${i}.gz`, key(`t${tag}-${i}`)));
        if (result.isError) throw new Error(`call failed: ${JSON.stringify(result.content)}`);
      }
    }),
  );
  return THROUGHPUT_CALLS / ((performance.now() - t0) / 1000);
}

async function connectHttp(url) {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(client, makeCall) {
  for (let i = 0; i < WARMUP; i++) await client.callTool(makeCall(`warm-${i}`));
  const times = [];
  for (let i = 0; i < CALLS; i++) {
    const call = makeCall(String(i));
    const t0 = performance.now();
    const result = await client.callTool(call);
    times.push(performance.now() - t0);
    if (result.isError) throw new Error(`call failed: ${JSON.stringify(result.content)}`);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

const run = Date.now().toString(36);
const key = (i) => `bench-${run}-${i}`;
const STDIO_KINDS = {
  'read-only (list_allowed_directories)': () => ({ name: 'list_allowed_directories', arguments: {} }),
  'mutating, new key (create_directory)': (i) => ({
    name: 'create_directory',
    arguments: { path: join(dir, 'd'), idempotency_key: key(`s${i}`) },
  }),
  'mutating, replay (same key)': () => ({
    name: 'create_directory',
    arguments: { path: join(dir, 'd'), idempotency_key: key('s-replayed') },
  }),
};
const gzip = (name, k) => ({
  name: 'gzip-file-as-resource',
  arguments: {
    name,
    data: 'data:text/plain;base64,aGVsbG8=',
    outputType: 'resourceLink',
    idempotency_key: k,
  },
});
// Keys by revision, so the second run's new keys are new to the ledger too.
const httpKinds = (tag) => ({
  'read-only (echo)': () => ({ name: 'echo', arguments: { message: 'hi' } }),
  'mutating, new key (gzip-file-as-resource)': (i) => gzip(`f${i}.gz`, key(`${tag}${i}`)),
  'mutating, replay (same key)': () => gzip('same.gz', key(`${tag}-replayed`)),
});

// The upstreams ignore idempotency_key (their schemas strip unknown arguments), so both sides make the same call.
async function compare(direct, gateway, kinds) {
  const rows = [];
  for (const [kind, makeCall] of Object.entries(kinds)) {
    const d = await measure(direct, makeCall);
    const g = await measure(gateway, makeCall);
    rows.push({ kind, d, g });
  }
  return rows;
}

/**
 * The ledger's own first execution, in this process, on the same Postgres: a mutating tool whose handler does
 * nothing, sequential calls with new keys as the gateway's. What a recorded call through the gateway should add
 * beyond it is the relay (the read-only call's added latency).
 */
async function ledgerAlone() {
  const ledger = await createLedger({
    connectionString: postgres.url,
    schema: `${schema}_alone`,
    telemetry: false,
  });
  try {
    const tool = ledger.tool({ name: 'create_directory', kind: 'mutation', handler: () => ({ ok: true }) });
    const call = (i) => tool.call({ path: 'd' }, { key: key(`alone-${i}`) });
    for (let i = 0; i < WARMUP; i++) await call(`warm-${i}`);
    const times = [];
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      await call(i);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    return { p50: percentile(times, 50), p99: percentile(times, 99) };
  } finally {
    await ledger.close();
  }
}

const sections = [];
let alone;
const scaling = [];
const children = [];
// A Set: the direct HTTP client serves two latency sections and is closed once.
const clients = new Set();

/** One section of the latency table: the same calls of each kind directly and through the gateway. */
async function latency(transport, direct, viaGateway, kinds) {
  clients.add(direct).add(viaGateway);
  sections.push({ transport, rows: await compare(direct, viaGateway, kinds) });
}

/** A `tool-ledger gateway --listen` replica in front of the HTTP upstream at `upstreamUrl`; resolves with its URL. */
async function httpGateway(upstreamUrl) {
  const gateway = await spawnReady(
    [cli, 'gateway', '--listen', '127.0.0.1:0', '--schema', schema, '--upstream', upstreamUrl],
    /serving MCP \(Streamable HTTP\) at (\S+)/,
  );
  children.push(gateway.child);
  return gateway.match[1];
}

try {
  alone = await ledgerAlone();
  await latency(
    'stdio, filesystem server',
    await connectStdio([filesystem, dir]),
    await connectStdio([cli, 'gateway', '--schema', schema, '--', process.execPath, filesystem, dir]),
    STDIO_KINDS,
  );

  const port = await freePort();
  const upstream = await spawnReady([everything, 'streamableHttp'], /listening on port/, {
    PORT: String(port),
  });
  children.push(upstream.child);
  const upstreamUrl = `http://127.0.0.1:${port}/mcp`;
  const gatewayUrl = await httpGateway(upstreamUrl);
  const directHttp = await connectHttp(upstreamUrl);
  await latency(
    'Streamable HTTP, everything server (session-based revision, SDK 1.x client)',
    directHttp,
    await connectHttp(gatewayUrl),
    httpKinds('h'),
  );
  await latency(
    'Streamable HTTP, everything server (2026-07-28 sessionless through the gateway, SDK 2.x client)',
    directHttp,
    await connectModern(gatewayUrl),
    httpKinds('m'),
  );

  const directRate = await throughput(() => connectHttp(upstreamUrl), 'direct');
  const replicas = [gatewayUrl];
  for (const count of [1, 2, 4]) {
    while (replicas.length < count) replicas.push(await httpGateway(upstreamUrl));
    const proxy = await roundRobin(replicas.slice(0, count));
    try {
      const rate = await throughput(() => connectModern(proxy.url), `r${count}`);
      scaling.push({ count, rate, ratio: rate / directRate });
    } finally {
      await proxy.close();
    }
  }
  scaling.unshift({ count: 0, rate: directRate, ratio: 1 });
} finally {
  await Promise.allSettled([...clients].map((c) => c.close()));
  const exits = children.map((child) =>
    child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : undefined,
  );
  for (const child of children) child.kill('SIGTERM');
  await Promise.allSettled(exits);
  const pool = new pg.Pool({ connectionString: postgres.url, max: 1 });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}_alone" CASCADE`);
  await pool.end();
  await postgres.stop();
}

// On a shared machine a p99 difference can come out negative: both sides' tails are mostly scheduling noise.
const ms = (v) => `${v.toFixed(2)} ms`.padStart(9);
console.log(
  `tool-ledger gateway: latency added per call, ${CALLS} sequential calls each (after ${WARMUP} warm-up), load ${loadavg()[0].toFixed(2)}`,
);
for (const { transport, rows } of sections) {
  console.log(`\n${transport}`);
  console.log(`${'call'.padEnd(42)}direct p50       p99   gateway p50       p99     added p50       p99`);
  for (const { kind, d, g } of rows) {
    console.log(
      `${kind.padEnd(42)}${ms(d.p50)} ${ms(d.p99)}   ${ms(g.p50)} ${ms(g.p99)}   ${ms(g.p50 - d.p50)} ${ms(g.p99 - d.p99)}`,
    );
  }
}

// Issue 41: a new mutating key over stdio should cost what the ledger's own first execution costs plus the relay.
const stdio = sections[0]?.rows ?? [];
const relay = stdio.find((r) => r.kind.startsWith('read-only'));
const recorded = stdio.find((r) => r.kind.startsWith('mutating, new key'));
if (alone && relay && recorded) {
  const relayP50 = relay.g.p50 - relay.d.p50;
  const expected = recorded.d.p50 + relayP50 + alone.p50;
  console.log(
    `\nstdio, mutating with a new key, p50: direct ${ms(recorded.d.p50)}, through the gateway ${ms(recorded.g.p50)} ` +
      `(${(recorded.g.p50 / recorded.d.p50).toFixed(2)}x direct); the ledger's own first execution ${ms(alone.p50)} ` +
      `(p99 ${ms(alone.p99)}) + the relay ${ms(relayP50)} = ${ms(expected)} (${(expected / recorded.d.p50).toFixed(2)}x direct); ` +
      `beyond those: ${ms(recorded.g.p50 - expected)}`,
  );
}

console.log(
  `\nThroughput: ${THROUGHPUT_CLIENTS} clients, ${THROUGHPUT_CALLS} mutating calls with new keys (everything server over HTTP; replicas behind a round-robin proxy, 2026-07-28 revision)`,
);
for (const { count, rate, ratio } of scaling) {
  const label = count === 0 ? 'direct to the upstream' : `${count} gateway replica${count > 1 ? 's' : ''}`;
  console.log(`${label.padEnd(42)}${rate.toFixed(0).padStart(6)} calls/s   ${ratio.toFixed(2)}x direct`);
}
