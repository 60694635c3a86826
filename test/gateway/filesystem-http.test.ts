// The gateway's CLI serving Streamable HTTP (--listen) in front of the npm filesystem server, driven by clients
// of both SDK lines; the tenant comes from a header or from a verified token claim, never from tool arguments.
import { createHmac } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  callTool,
  errorCode,
  FILESYSTEM_SERVER,
  gatewaySuite,
  httpClient,
  httpGateway,
  LINES,
  outcome,
  tempDir,
} from './support.js';

const suite = gatewaySuite('http');
const { db, schema } = suite;
const dir = tempDir('http');
let byHeader: URL;
let byToken: URL;
const SECRET = 'test-only-hs256-secret';

function jwt(claims: Record<string, unknown>, secret = SECRET): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`;
  return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
}

beforeAll(async () => {
  const common = suite.ledgerArgs();
  const upstream = ['--', process.execPath, FILESYSTEM_SERVER, dir];
  const header = await httpGateway([...common, '--tenant-header', 'x-tenant-id', ...upstream]);
  await suite.child(header);
  byHeader = header.url;
  const token = await httpGateway(
    [
      ...common,
      '--token-secret-env',
      'GW_TOKEN_SECRET',
      '--tenant-claim',
      'org',
      '--token-audience',
      'gw',
      ...upstream,
    ],
    { GW_TOKEN_SECRET: SECRET },
  );
  await suite.child(token);
  byToken = token.url;
});

const connect = async (line: (typeof LINES)[number], url: URL, headers: Record<string, string>) => {
  const client = await httpClient(line, url, headers);
  await suite.client(client);
  return client;
};

describe.each(LINES)('gateway over Streamable HTTP, MCP SDK %s client', (line) => {
  const tag = line.replace('.', '');

  it('replays a repeated move_file and moves the file once', async () => {
    const client = await connect(line, byHeader, { 'x-tenant-id': 'acme' });
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'move_file')?.inputSchema.required).toContain('idempotency_key');
    writeFileSync(join(dir, `h${tag}.txt`), 'over http');
    const args = {
      source: join(dir, `h${tag}.txt`),
      destination: join(dir, `h${tag}-moved.txt`),
      idempotency_key: `http-${tag}`,
    };
    expect(outcome(await callTool(client, 'move_file', args))).toBe('executed');
    const again = await callTool(client, 'move_file', args);
    expect(outcome(again)).toBe('replayed');
    expect(again.isError).toBeFalsy();
    expect(readFileSync(join(dir, `h${tag}-moved.txt`), 'utf8')).toBe('over http');
    const changed = await callTool(client, 'move_file', { ...args, destination: join(dir, 'elsewhere.txt') });
    expect(errorCode(changed)).toBe('KEY_REUSED');
    expect(existsSync(join(dir, 'elsewhere.txt'))).toBe(false);
  });

  it('scopes keys by the tenant header: the same key in another tenant is another intent', async () => {
    const other = await connect(line, byHeader, { 'x-tenant-id': 'globex' });
    writeFileSync(join(dir, `g${tag}.txt`), 'globex');
    const result = await callTool(other, 'move_file', {
      source: join(dir, `g${tag}.txt`),
      destination: join(dir, `g${tag}-moved.txt`),
      idempotency_key: `http-${tag}`,
    });
    expect(outcome(result)).toBe('executed');
    const rows = await db.sql<{ tenant_id: string }>(
      `SELECT tenant_id FROM "${schema}".tool_runs WHERE idempotency_key = $1 ORDER BY tenant_id`,
      [`http-${tag}`],
    );
    expect(rows.map((r) => r.tenant_id)).toEqual(['acme', 'globex']);
  });

  it('takes the tenant from a verified token claim and refuses a bad token', async () => {
    const client = await connect(line, byToken, {
      authorization: `Bearer ${jwt({ sub: 'u1', org: 'initech', aud: 'gw' })}`,
    });
    const read = await callTool(client, 'list_allowed_directories', {});
    expect(read.isError).toBeFalsy();
    writeFileSync(join(dir, `t${tag}.txt`), 'token');
    const moved = await callTool(client, 'move_file', {
      source: join(dir, `t${tag}.txt`),
      destination: join(dir, `t${tag}-moved.txt`),
      idempotency_key: `token-${tag}`,
    });
    expect(outcome(moved)).toBe('executed');
    const rows = await db.sql<{ tenant_id: string; user_id: string }>(
      `SELECT tenant_id, user_id FROM "${schema}".tool_runs WHERE idempotency_key = $1`,
      [`token-${tag}`],
    );
    expect(rows).toEqual([{ tenant_id: 'initech', user_id: 'u1' }]);
    await expect(
      connect(line, byToken, {
        authorization: `Bearer ${jwt({ sub: 'u1', org: 'initech', aud: 'gw' }, 'wrong')}`,
      }),
    ).rejects.toThrow();
  });
});

it('keeps a session to the tenant that opened it', async () => {
  const client = await connect('1.x', byHeader, { 'x-tenant-id': 'acme' });
  const sessionId = (client.transport as { sessionId?: string } | undefined)?.sessionId;
  expect(sessionId).toBeTruthy();
  const hijack = await fetch(byHeader, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-session-id': sessionId as string,
      'mcp-protocol-version': '2025-11-25',
      'x-tenant-id': 'globex',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  expect(hijack.status).toBe(403);
});

it('refuses an HTTP client without the configured tenant header', async () => {
  await expect(connect('1.x', byHeader, {})).rejects.toThrow();
});
