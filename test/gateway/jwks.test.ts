import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningGateway, startGateway } from '../../src/gateway/index.js';
import { callTool, databaseUrl, gatewaySuite, httpClient, outcome, ROOT } from './support.js';

// The gateway over Streamable HTTP verifying bearer JWTs against a real JWKS endpoint (src/auth/jwks.ts, shared
// with the console): the tenant from a claim, an unknown key or a missing token refused with 401.

const suite = gatewaySuite('jwks');
const { db, schema } = suite;
const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 });
let jwks: Server;
let gateway: RunningGateway;

function jwt(claims: Record<string, unknown>, key = keys.privateKey): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const body = `${part({ alg: 'RS256', kid: 'gw-1' })}.${part({ exp: Date.now() / 1000 + 600, ...claims })}`;
  return `${body}.${sign('sha256', Buffer.from(body), key).toString('base64url')}`;
}

beforeAll(async () => {
  jwks = createServer((_req, res) =>
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(
        JSON.stringify({ keys: [{ ...keys.publicKey.export({ format: 'jwk' }), kid: 'gw-1', use: 'sig' }] }),
      ),
  );
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  gateway = await suite.onClose(
    startGateway({
      upstream: { command: process.execPath, args: [join(ROOT, 'test/gateway/fixtures/probe-server.mjs')] },
      ledger: { connectionString: databaseUrl(), schema },
      listen: { host: '127.0.0.1', port: 0 },
      identity: {
        token: {
          jwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
          audience: 'gw',
        },
        tenantClaim: 'org',
      },
      log: () => {},
    }),
  );
});

afterAll(async () => {
  await new Promise<void>((resolve) => jwks.close(() => resolve()));
});

describe('the gateway with --token-jwks-url', () => {
  it('refuses a request without a token, or signed by a key the JWKS lacks', async () => {
    const url = gateway.url as URL;
    const post = (headers: Record<string, string>) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
    expect((await post({})).status).toBe(401);
    const forged = jwt({ org: 'acme', aud: 'gw', sub: 'u' }, stranger.privateKey);
    expect((await post({ authorization: `Bearer ${forged}` })).status).toBe(401);
  });

  it('serves a client whose JWT the JWKS verifies, with the tenant from its claim', async () => {
    const token = jwt({ org: 'acme', aud: 'gw', sub: 'agent-1' });
    const client = await suite.client(
      httpClient('1.x', gateway.url as URL, { authorization: `Bearer ${token}` }),
    );
    const result = await callTool(client, 'record_args', { idempotency_key: 'jwks-1' });
    expect(outcome(result)).toBe('executed');
    const rows = await db.sql(
      `SELECT tenant_id, user_id FROM "${schema}".tool_runs WHERE idempotency_key = 'jwks-1'`,
    );
    expect(rows).toEqual([{ tenant_id: 'acme', user_id: 'agent-1' }]);
  });
});
