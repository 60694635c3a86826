// Shared helpers of the gateway suites: real MCP servers from npm, the gateway's real CLI as a child process,
// and real clients of both MCP SDK lines.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as HttpClientV2,
} from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioClientV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpClientV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import { afterAll } from 'vitest';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const FILESYSTEM_SERVER = join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js',
);
export const EVERYTHING_SERVER = join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);
const CLI = join(ROOT, 'src/cli/main.ts');

export type Line = '1.x' | '2.x';
export const LINES: readonly Line[] = ['1.x', '2.x'];

export type ToolResult = {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
};

/** The calls the suites make, typed once for both SDK lines (their method shapes are the same). */
export type AnyClient = ClientV1;

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: the vitest global setup should have started Postgres.');
  return url;
}

/**
 * The test database as a user passes it on the command line: the URL without its password, which goes into
 * `PGPASSWORD` for the processes this suite spawns, as the CLI's refusal of a password in `--database-url` tells
 * users to do. The embedded server a fresh clone's `npm test` starts has a password; CI's server has none.
 */
export function cliDatabaseUrl(url = databaseUrl()): string {
  const parsed = new URL(url);
  if (parsed.password === '') return url;
  process.env.PGPASSWORD = decodeURIComponent(parsed.password);
  parsed.password = '';
  return parsed.toString();
}

/**
 * For a client that starts the gateway with only a few variables of its own choosing (the MCP SDK's stdio transport
 * passes HOME, PATH and the like, so no PGPASSWORD): a libpq password file (mode 0600) with the test database's
 * password, to name in PGPASSFILE, or undefined when its URL has none.
 */
export function passwordFile(url = databaseUrl()): string | undefined {
  const parsed = new URL(url);
  if (parsed.password === '') return undefined;
  const file = join(tempDir('pgpass'), 'pgpass');
  writeFileSync(file, `*:*:*:*:${decodeURIComponent(parsed.password).replace(/[\\:]/g, '\\$&')}\n`, {
    mode: 0o600,
  });
  return file;
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `tl-gw-${prefix}-`));
}

/** `node --import tsx src/cli/main.ts gateway …`: the CLI as users run it, from source. */
export function gatewayCommand(args: readonly string[]): { command: string; args: string[] } {
  return { command: process.execPath, args: ['--import', 'tsx', CLI, 'gateway', ...args] };
}

/** A client of the line, connected over stdio to a spawned process (the gateway, or a server directly). */
export async function stdioClient(
  line: Line,
  spawn: { command: string; args: string[] },
): Promise<AnyClient> {
  const params = { ...spawn, cwd: ROOT, stderr: 'pipe' as const, env: process.env as Record<string, string> };
  if (line === '1.x') {
    const client = new ClientV1({ name: 'gateway-test', version: '1' });
    await client.connect(new StdioClientV1(params));
    return client;
  }
  const client = new ClientV2({ name: 'gateway-test', version: '1' });
  await client.connect(new StdioClientV2(params));
  return client as unknown as AnyClient;
}

/** A client of the line, connected over Streamable HTTP. */
export async function httpClient(
  line: Line,
  url: URL,
  headers: Record<string, string> = {},
): Promise<AnyClient> {
  if (line === '1.x') {
    const client = new ClientV1({ name: 'gateway-test', version: '1' });
    await client.connect(new HttpClientV1(url, { requestInit: { headers } }));
    return client;
  }
  const client = new ClientV2({ name: 'gateway-test', version: '1' });
  await client.connect(new HttpClientV2(url, { requestInit: { headers } }));
  return client as unknown as AnyClient;
}

export async function callTool(
  client: AnyClient,
  name: string,
  args: Record<string, unknown>,
  meta?: Record<string, unknown>,
): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args, ...(meta ? { _meta: meta } : {}) })) as ToolResult;
}

/**
 * callTool with progress and a timeout of its own: 1.x takes (params, resultSchema, options), 2.x takes
 * (params, options).
 */
export function callWithProgress(
  line: Line,
  client: AnyClient,
  params: { name: string; arguments: Record<string, unknown> },
  onprogress: () => void,
  timeoutMs: number,
): Promise<ToolResult> {
  const options = { onprogress, timeout: timeoutMs };
  return (
    line === '1.x'
      ? client.callTool(params, undefined, options)
      : (client.callTool as unknown as (p: unknown, o: unknown) => Promise<unknown>)(params, options)
  ) as Promise<ToolResult>;
}

/** The gateway's arguments in front of the filesystem server on `dir`, for tenant acme. */
export function filesystemGatewayArgs(schema: string, dir: string, url = cliDatabaseUrl()): string[] {
  return [
    '--database-url',
    url,
    '--schema',
    schema,
    '--tenant',
    'acme',
    '--',
    process.execPath,
    FILESYSTEM_SERVER,
    dir,
  ];
}

export function texts(result: ToolResult): string {
  return result.content.map((block) => block.text ?? '').join('\n');
}

export function outcome(result: ToolResult): unknown {
  return (result._meta?.['tool-ledger/call'] as { outcome?: unknown } | undefined)?.outcome;
}

export function errorCode(result: ToolResult): unknown {
  return (result._meta?.['tool-ledger/error'] as { code?: unknown } | undefined)?.code;
}

/** SQL on the test database, for assertions on the ledger rows. */
export interface TestDatabase {
  sql<R>(text: string, params?: unknown[]): Promise<R[]>;
  drop(schema: string): Promise<void>;
  end(): Promise<void>;
}

/** Runs SQL on the test database, for assertions on the ledger rows; drops the schemas it was given at the end. */
export function database(): TestDatabase {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
  return {
    sql: async <R>(text: string, params?: unknown[]) => (await pool.query(text, params)).rows as R[],
    drop: async (schema) => {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    },
    end: () => pool.end(),
  };
}

/** Waits until `check` holds, at most `attempts` times `stepMs` (a bound, not a timing assertion). */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  attempts = 200,
  stepMs = 50,
): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`condition not met after ${attempts} checks`);
}

/** A long-running child (a gateway on HTTP, an HTTP server) that a suite stops by its own pid. */
export interface Child {
  readonly process: import('node:child_process').ChildProcess;
  readonly stderr: () => string;
  stop(): Promise<void>;
}

/** Spawns a child and waits until a line of its output matches `ready` (bounded by `attempts` checks). */
export async function spawnUntil(
  command: string,
  args: readonly string[],
  ready: RegExp,
  env: Record<string, string> = {},
): Promise<Child & { readonly match: RegExpMatchArray }> {
  const { spawn } = await import('node:child_process');
  const child = spawn(command, [...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += String(chunk);
  });
  child.stderr?.on('data', (chunk) => {
    output += String(chunk);
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  try {
    await eventually(() => ready.test(output) || child.exitCode !== null, 600, 50);
  } catch (error) {
    await stop();
    throw error;
  }
  const match = output.match(ready);
  if (!match) throw new Error(`${command} exited before it was ready:\n${output}`);
  return { process: child, stderr: () => output, stop, match };
}

/** A port nobody listens on right now, for servers that take their port from the environment. */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as import('node:net').AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `tool-ledger gateway --listen 127.0.0.1:0 …` as a child; resolves with the URL it serves. */
export async function httpGateway(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Child & { readonly url: URL }> {
  const { command, args: full } = gatewayCommand(['--listen', '127.0.0.1:0', ...args]);
  const child = await spawnUntil(command, full, /serving MCP \(Streamable HTTP\) at (\S+)/, env);
  return { ...child, url: new URL(child.match[1] as string) };
}

/** What a suite opens and the fixture closes: MCP clients, gateways run as libraries, proxies. */
interface Closable {
  close(): Promise<unknown>;
}

/**
 * One gateway suite's schema and everything it opens, released by one `afterAll` of the fixture's own (in the
 * file, or in the `describe` that called it): clients first, then what `onClose` was given (gateways started as
 * libraries, proxies), then the children (gateways and servers spawned), then the schema and the pool.
 */
export interface GatewaySuite {
  readonly db: TestDatabase;
  /** `gw_<name>_<pid>`: the suite's own schema, dropped at the end. */
  readonly schema: string;
  /** The CLI's ledger arguments for the suite's schema: `--database-url <url> --schema <schema>`. */
  ledgerArgs(): string[];
  /** The ledger rows of a key, status and attempt. */
  runs(key: string): Promise<Array<{ status: string; attempt: number }>>;
  /** Keeps a client to close at the end; answers it. */
  client<T extends Closable>(client: T | Promise<T>): Promise<T>;
  /** Keeps a spawned child to stop at the end; answers it. */
  child<T extends Child>(child: T | Promise<T>): Promise<T>;
  /** Something else to close at the end (a gateway started with startGateway, a proxy). */
  onClose<T extends Closable>(closable: T | Promise<T>): Promise<T>;
}

export function gatewaySuite(name: string): GatewaySuite {
  const db = database();
  const schema = `gw_${name}_${process.pid}`;
  const clients: Closable[] = [];
  const others: Closable[] = [];
  const children: Child[] = [];
  afterAll(async () => {
    await Promise.allSettled(clients.map((c) => c.close()));
    await Promise.allSettled(others.map((c) => c.close()));
    await Promise.allSettled(children.map((c) => c.stop()));
    await db.drop(schema);
    await db.end();
  });
  const keep =
    <T>(list: T[]) =>
    async (item: T | Promise<T>): Promise<T> => {
      const value = await item;
      list.push(value);
      return value;
    };
  return {
    db,
    schema,
    ledgerArgs: () => ['--database-url', cliDatabaseUrl(), '--schema', schema],
    runs: (key) =>
      db.sql(`SELECT status, attempt FROM "${schema}".tool_runs WHERE idempotency_key = $1`, [key]),
    client: keep(clients) as GatewaySuite['client'],
    child: keep(children) as GatewaySuite['child'],
    onClose: keep(others) as GatewaySuite['onClose'],
  };
}

/**
 * An MCP server from npm (or a fixture) serving Streamable HTTP on a free port of its own, as an upstream for a
 * gateway's `--upstream`; `port` lets a suite start it again on the same address.
 */
export async function httpUpstream(
  script: string = EVERYTHING_SERVER,
  args: readonly string[] = ['streamableHttp'],
  port?: number,
): Promise<Child & { readonly url: URL; readonly port: number }> {
  const at = port ?? (await freePort());
  const child = await spawnUntil(process.execPath, [script, ...args], /listening on port/, {
    PORT: String(at),
  });
  return { ...child, port: at, url: new URL(`http://127.0.0.1:${at}/mcp`) };
}
