// Where a gateway's CPU goes per call: the processes' own CPU time (from /proc) per mutating call with a new key, in
// two set-ups, each against the same calls sent straight to the upstream:
// - sessionless Streamable HTTP (the 2026-07-28 revision): one `tool-ledger gateway --listen` replica in front of
//   the npm everything server, 8 SDK 2.x clients sharing BENCH_GATEWAY_CPU_CALLS calls (no proxy between them);
// - stdio: one SDK 1.x client calling through `tool-ledger gateway -- <filesystem server>`, one call at a time.
// Printed per set-up: calls/s, and CPU µs per call of the gateway, the upstream and the clients. With
// BENCH_CPU_PROF=1 each gateway also runs under `node --cpu-prof`, and its samples are printed by owner: each sample
// goes to the nearest function on its stack that belongs to a package or to tool-ledger (node's internals and
// native frames are charged to whoever called them). The profile samples wall time, so idle time is its own row.
//
// Run: npm run build && node bench/gateway-cpu.mjs
// Env: DATABASE_URL (else an embedded Postgres), BENCH_GATEWAY_CPU_CALLS (default 1500), BENCH_CPU_PROF=1.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
import { startPostgres } from './postgres.mjs';
import { freePort, spawnReady } from './support/processes.mjs';

const CALLS = Number(process.env.BENCH_GATEWAY_CPU_CALLS ?? 1500);
const WARMUP = 300;
const CLIENTS = 8;
const PROFILE = process.env.BENCH_CPU_PROF === '1';
const root = fileURLToPath(new URL('..', import.meta.url));
const cli = join(root, 'dist/cli/main.js');
const everything = join(root, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const filesystem = join(root, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const dir = mkdtempSync(join(tmpdir(), 'tl-gw-cpu-'));
const run = Date.now().toString(36);
const children = [];

/** User plus system CPU of a process so far, in µs (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuUs(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** `calls` calls shared by the clients, as fast as they answer; returns calls per second. */
async function load(clients, calls, makeCall) {
  let issued = 0;
  const started = performance.now();
  await Promise.all(
    clients.map(async (client) => {
      while (issued < calls) {
        const result = await client.callTool(makeCall(issued++));
        if (result.isError) throw new Error(`call failed: ${JSON.stringify(result.content)}`);
      }
    }),
  );
  return calls / ((performance.now() - started) / 1000);
}

/** Calls/s and CPU µs per call of each process while `clients` make CALLS calls (after a warm-up). */
async function measured(clients, makeCall, pids) {
  await load(clients, WARMUP, (i) => makeCall(`w${i}`));
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuUs(pid)]));
  const own = process.cpuUsage();
  const rate = await load(clients, CALLS, (i) => makeCall(String(i)));
  const used = process.cpuUsage(own);
  const perCall = Object.fromEntries(
    Object.entries(pids).map(([name, pid]) => [name, (cpuUs(pid) - before[name]) / CALLS]),
  );
  return { rate, ...perCall, clients: (used.user + used.system) / CALLS };
}

/** The profile's samples by owner: the nearest stack frame in a package or in tool-ledger's dist. */
function byOwner(profileDir, usPerCall) {
  const file = readdirSync(profileDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return [];
  const profile = JSON.parse(readFileSync(join(profileDir, file), 'utf8'));
  const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const ownerOf = (url) => {
    if (!url || url.startsWith('node:')) return undefined;
    const pkg = url.match(/node_modules\/((@[^/]+\/)?[^/]+)\//);
    if (pkg) return pkg[1];
    const own = url.split('/dist/')[1];
    return own ? `tool-ledger ${own.split('/')[0]}` : undefined;
  };
  const totals = new Map();
  for (const id of profile.samples) {
    let owner;
    for (let at = id; at !== undefined && owner === undefined; at = parent.get(at)) {
      owner = ownerOf(nodes.get(at).callFrame.url);
    }
    owner ??= `node, no caller in a package: ${nodes.get(id).callFrame.functionName || '(anonymous)'}`;
    totals.set(owner, (totals.get(owner) ?? 0) + 1);
  }
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 14)
    .map(([owner, n]) => ({
      owner,
      share: `${((100 * n) / profile.samples.length).toFixed(1)}%`,
      'µs per call (of wall time)': ((usPerCall * n) / profile.samples.length).toFixed(0),
    }));
}

function profileArgs(name) {
  if (!PROFILE) return { args: [], dir: undefined };
  const profileDir = mkdtempSync(join(tmpdir(), `tl-gw-cpu-prof-${name}-`));
  return { args: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`], dir: profileDir };
}

async function stopped(child) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

const postgres = await startPostgres();
process.env.DATABASE_URL = postgres.url;
const schema = `bench_gateway_cpu_${process.pid}`;
const rows = {};
const profiles = {};
try {
  console.log(
    `gateway CPU per mutating call with a new key, ${CALLS} calls after ${WARMUP} (load average ${loadavg()[0].toFixed(1)})`,
  );
  // Sessionless Streamable HTTP: one replica, CLIENTS clients, no proxy.
  const port = await freePort();
  const upstream = await spawnReady([everything, 'streamableHttp'], /listening on port/, {
    PORT: String(port),
  });
  children.push(upstream.child);
  const upstreamUrl = `http://127.0.0.1:${port}/mcp`;
  const httpProfile = profileArgs('http');
  const gateway = await spawnReady(
    [
      ...httpProfile.args,
      cli,
      'gateway',
      '--listen',
      '127.0.0.1:0',
      '--schema',
      schema,
      '--upstream',
      upstreamUrl,
    ],
    /serving MCP \(Streamable HTTP\) at (\S+)/,
  );
  children.push(gateway.child);
  const gzip = (tag) => (i) => ({
    name: 'gzip-file-as-resource',
    arguments: {
      name: `f${i}.gz`,
      data: 'data:text/plain;base64,aGVsbG8=',
      outputType: 'resourceLink',
      idempotency_key: `cpu-${run}-${tag}-${i}`,
    },
  });
  const direct = [];
  for (let i = 0; i < CLIENTS; i++) {
    const client = new Client({ name: 'bench', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(upstreamUrl)));
    direct.push(client);
  }
  rows['HTTP, direct (SDK 1.x clients, session-based)'] = await measured(direct, gzip('d'), {
    upstream: upstream.child.pid,
  });
  for (const client of direct) await client.close();
  const viaGateway = [];
  for (let i = 0; i < CLIENTS; i++) {
    const client = new ClientV2(
      { name: 'bench', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new HttpClientV2(new URL(gateway.match[1])));
    viaGateway.push(client);
  }
  rows['HTTP, 1 gateway replica (SDK 2.x clients, 2026-07-28)'] = await measured(viaGateway, gzip('g'), {
    gateway: gateway.child.pid,
    upstream: upstream.child.pid,
  });
  for (const client of viaGateway) await client.close();
  const httpUs = 1e6 / rows['HTTP, 1 gateway replica (SDK 2.x clients, 2026-07-28)'].rate;
  await stopped(gateway.child);
  await stopped(upstream.child);
  if (httpProfile.dir) profiles['HTTP replica'] = byOwner(httpProfile.dir, httpUs);

  // stdio: one client, one call at a time.
  const mkdir = (tag) => (i) => ({
    name: 'create_directory',
    arguments: { path: join(dir, 'd'), idempotency_key: `cpu-${run}-${tag}-${i}` },
  });
  const stdio = async (args) => {
    const client = new Client({ name: 'bench', version: '1' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args,
      stderr: 'ignore',
      env: process.env,
    });
    await client.connect(transport);
    return { client, pid: transport.pid };
  };
  const straight = await stdio([filesystem, dir]);
  rows['stdio, direct (one call at a time)'] = await measured([straight.client], mkdir('sd'), {
    upstream: straight.pid,
  });
  await straight.client.close();
  const stdioProfile = profileArgs('stdio');
  const through = await stdio([
    ...stdioProfile.args,
    cli,
    'gateway',
    '--schema',
    schema,
    '--',
    process.execPath,
    filesystem,
    dir,
  ]);
  rows['stdio, through the gateway (one call at a time)'] = await measured([through.client], mkdir('sg'), {
    gateway: through.pid,
  });
  const stdioUs = 1e6 / rows['stdio, through the gateway (one call at a time)'].rate;
  await through.client.close();
  if (stdioProfile.dir) {
    // The client's close ends the gateway; its profile is written as it exits.
    for (let i = 0; i < 50 && readdirSync(stdioProfile.dir).length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    profiles['stdio gateway'] = byOwner(stdioProfile.dir, stdioUs);
  }

  console.table(
    Object.fromEntries(
      Object.entries(rows).map(([name, row]) => [
        name,
        {
          'calls/s': row.rate.toFixed(0),
          'gateway µs': row.gateway === undefined ? '' : row.gateway.toFixed(0),
          'upstream µs': row.upstream === undefined ? '' : row.upstream.toFixed(0),
          'clients µs': row.clients.toFixed(0),
        },
      ]),
    ),
  );
  for (const [name, owners] of Object.entries(profiles)) {
    console.log(`${name}: wall-time samples by owner (BENCH_CPU_PROF=1)`);
    console.table(owners);
  }
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  await postgres.stop();
}
