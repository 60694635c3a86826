import { generateKeyPairSync, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../src/console/index.js';
import { createLedger, type Ledger, OutcomeUnknownError } from '../../src/index.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';

// What the console refuses, over plain HTTP (the browser suite shows the pages): writes in read-only mode, without
// a CSRF token, from another site or by a viewer; requests without a valid credential when auth is on; listening
// beyond loopback without auth. And JWT sign-in against a real JWKS endpoint, roles from a claim.

const schema = uniqueSchema('console_refusals');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const OPERATOR_TOKEN = 'o'.repeat(40);
const VIEWER_TOKEN = 'v'.repeat(40);
const keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
let jwks: Server;
let ledger: Ledger;
let tokens: RunningConsole;
let readOnly: RunningConsole;
let byJwt: RunningConsole;
let unknownRunId: string;

function jwt(claims: Record<string, unknown>): string {
  const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const body = `${part({ alg: 'ES256', kid: 'k1' })}.${part({ exp: Date.now() / 1000 + 600, ...claims })}`;
  return `${body}.${sign('sha256', Buffer.from(body), { key: keys.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The CSRF token of the forms a credential is shown (read from the inbox page's resolve form). */
async function csrfOf(app: RunningConsole, headers: Record<string, string>): Promise<string> {
  const page = await (await fetch(new URL('/search', app.url), { headers })).text();
  const match = /name="csrf" value="([^"]+)"/.exec(page);
  if (!match) throw new Error('no CSRF token on the page');
  return match[1] as string;
}

function post(
  app: RunningConsole,
  path: string,
  form: Record<string, string> | string[][],
  headers: Record<string, string>,
) {
  return fetch(new URL(path, app.url), {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: app.url.origin, ...headers },
    body: new URLSearchParams(form),
  });
}

const resolveForm = (csrf: string) => ({ csrf, resolution: 'rerun', reason: 'checked the provider' });

beforeAll(async () => {
  jwks = createServer((_req, res) =>
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(
        JSON.stringify({ keys: [{ ...keys.publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig' }] }),
      ),
  );
  await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
  ledger = await createLedger({
    connectionString: databaseUrl(),
    schema,
    telemetry: false,
    ...TEST_DISTRIBUTION,
  });
  const tool = ledger.tool({
    name: 'charge_card',
    kind: 'mutation',
    handler: async (_: unknown, ctx) =>
      ctx.step('charge', () => {
        throw new OutcomeUnknownError('hung up');
      }),
  });
  await expect(tool.call({}, { key: 'k-unknown' })).rejects.toMatchObject({ code: 'OUTCOME_UNKNOWN' });
  const { rows } = await pool.query(
    `SELECT id::text AS id FROM "${schema}".tool_runs WHERE idempotency_key = 'k-unknown'`,
  );
  unknownRunId = rows[0].id;
  const base = { connectionString: databaseUrl(), schema, port: 0 };
  tokens = await startConsole({
    ...base,
    allowWrites: true,
    auth: {
      tokens: [
        { role: 'operator', actor: 'ana', token: OPERATOR_TOKEN },
        { role: 'viewer', actor: 'vic', token: VIEWER_TOKEN },
      ],
    },
  });
  readOnly = await startConsole({ ...base });
  byJwt = await startConsole({
    ...base,
    allowWrites: true,
    auth: {
      jwt: {
        jwksUrl: `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`,
        audience: 'console',
        actorClaim: 'email',
      },
    },
  });
});

afterAll(async () => {
  await Promise.allSettled([tokens?.close(), readOnly?.close(), byJwt?.close()]);
  await ledger?.close();
  await new Promise<void>((resolve) => jwks.close(() => resolve()));
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

const status = async () =>
  (await pool.query(`SELECT status FROM "${schema}".tool_runs WHERE id = $1`, [unknownRunId])).rows[0].status;

describe('the console refuses', () => {
  it('a request without a valid credential when auth is on (401), and sends security headers', async () => {
    const none = await fetch(new URL('/search', tokens.url));
    expect(none.status).toBe(401);
    expect(await none.text()).toContain('Sign in first.');
    expect((await fetch(new URL('/', tokens.url), { headers: bearer('w'.repeat(40)) })).status).toBe(401);
    expect(
      (await fetch(new URL(`/runs/${unknownRunId}`, tokens.url), { headers: bearer(OPERATOR_TOKEN) })).status,
    ).toBe(200);
    expect(none.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(none.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('a write without a CSRF token, with another identity’s, or from another site', async () => {
    const headers = bearer(OPERATOR_TOKEN);
    const missing = await post(
      tokens,
      `/runs/${unknownRunId}/resolve`,
      { resolution: 'rerun', reason: 'x' },
      headers,
    );
    expect(missing.status).toBe(403);
    expect(await missing.text()).toContain('no valid CSRF token');
    const viewers = await csrfOf(tokens, bearer(VIEWER_TOKEN));
    expect((await post(tokens, `/runs/${unknownRunId}/resolve`, resolveForm(viewers), headers)).status).toBe(
      403,
    );
    const own = await csrfOf(tokens, headers);
    const foreign = await post(tokens, `/runs/${unknownRunId}/resolve`, resolveForm(own), {
      ...headers,
      origin: 'https://evil.example',
    });
    expect(foreign.status).toBe(403);
    expect(await status()).toBe('unknown');
  });

  it("a viewer's write, and a write in read-only mode", async () => {
    const viewer = bearer(VIEWER_TOKEN);
    const denied = await post(
      tokens,
      `/runs/${unknownRunId}/resolve`,
      resolveForm(await csrfOf(tokens, viewer)),
      viewer,
    );
    expect(denied.status).toBe(403);
    expect(await denied.text()).toContain('needs the operator role');
    const ro = await post(
      readOnly,
      `/runs/${unknownRunId}/resolve`,
      resolveForm(await csrfOf(readOnly, {})),
      {},
    );
    expect(ro.status).toBe(403);
    expect(await ro.text()).toContain('read-only');
    expect(await status()).toBe('unknown');
  });

  it('a bulk write as it refuses a single one: no CSRF token, a viewer, read-only, no reason, nothing selected', async () => {
    const bulk = (csrf: string, extra: string[][] = []) => [
      ['csrf', csrf],
      ['resolution', 'rerun'],
      ['reason', 'provider outage, ticket 12'],
      ['run', unknownRunId],
      ...extra,
    ];
    const headers = bearer(OPERATOR_TOKEN);
    const viewer = bearer(VIEWER_TOKEN);
    const noCsrf = await post(tokens, '/inbox/unknown/bulk', bulk('').slice(1), headers);
    expect(noCsrf.status).toBe(403);
    expect(await noCsrf.text()).toContain('no valid CSRF token');
    const byViewer = await post(tokens, '/inbox/unknown/bulk', bulk(await csrfOf(tokens, viewer)), viewer);
    expect(byViewer.status).toBe(403);
    expect(await byViewer.text()).toContain('needs the operator role');
    const decideByViewer = await post(
      tokens,
      '/inbox/approvals/bulk',
      [...bulk(await csrfOf(tokens, viewer)), ['decision', 'decline']],
      viewer,
    );
    expect(decideByViewer.status).toBe(403);
    const ro = await post(readOnly, '/inbox/unknown/bulk', bulk(await csrfOf(readOnly, {})), {});
    expect(ro.status).toBe(403);
    expect(await ro.text()).toContain('read-only');
    const csrf = await csrfOf(tokens, headers);
    const noReason = await post(
      tokens,
      '/inbox/unknown/bulk',
      bulk(csrf).map(([k, v]) => [k as string, k === 'reason' ? ' ' : (v as string)]),
      headers,
    );
    expect(noReason.status).toBe(400);
    const none = await post(
      tokens,
      '/inbox/unknown/bulk',
      bulk(csrf).filter(([k]) => k !== 'run'),
      headers,
    );
    expect(none.status).toBe(400);
    expect(await none.text()).toContain('Select at least one run');
    const withResult = await post(
      tokens,
      '/inbox/unknown/bulk',
      bulk(csrf).map(([k, v]) => [k as string, k === 'resolution' ? 'result' : (v as string)]),
      headers,
    );
    expect(withResult.status).toBe(400);
    expect(await withResult.text()).toContain('give a result one run at a time');
    const notAnId = await post(tokens, '/inbox/unknown/bulk', bulk(csrf, [['run', '1; DROP']]), headers);
    expect(notAnId.status).toBe(400);
    expect(await status()).toBe('unknown');
  });

  it('a write without a reason; then an operator’s write lands, recorded under the identity, not a form field', async () => {
    const headers = bearer(OPERATOR_TOKEN);
    const csrf = await csrfOf(tokens, headers);
    const noReason = await post(
      tokens,
      `/runs/${unknownRunId}/resolve`,
      { ...resolveForm(csrf), reason: ' ' },
      headers,
    );
    expect(noReason.status).toBe(400);
    const done = await post(
      tokens,
      `/runs/${unknownRunId}/resolve`,
      { ...resolveForm(csrf), by: 'mallory' },
      headers,
    );
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe(`/runs/${unknownRunId}?done=resolved`);
    const { rows } = await pool.query(`SELECT resolved_by, reason FROM "${schema}".tool_runs_resolved`);
    expect(rows).toEqual([{ resolved_by: 'ana', reason: 'checked the provider' }]);
  });

  it('signs in JWTs by JWKS with the role from a claim: none or a wrong audience is refused', async () => {
    const operator = jwt({ email: 'ana@example.com', roles: ['operator'], aud: 'console' });
    const page = await fetch(new URL('/', byJwt.url), { headers: bearer(operator) });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Signed in as <strong>ana@example.com</strong> (operator)');
    const viewer = jwt({ email: 'vic@example.com', roles: 'viewer', aud: 'console' });
    expect(await (await fetch(new URL('/', byJwt.url), { headers: bearer(viewer) })).text()).toContain(
      '(viewer)',
    );
    const noRole = await fetch(new URL('/', byJwt.url), {
      headers: bearer(jwt({ email: 'x', aud: 'console' })),
    });
    expect(noRole.status).toBe(403);
    const wrongAudience = jwt({ email: 'ana@example.com', roles: ['operator'], aud: 'other' });
    expect((await fetch(new URL('/', byJwt.url), { headers: bearer(wrongAudience) })).status).toBe(401);
  });

  it('to listen beyond loopback without auth, and to start on a schema without a ledger', async () => {
    await expect(
      startConsole({ connectionString: databaseUrl(), schema, host: '0.0.0.0', port: 0 }),
    ).rejects.toThrow(/loopback only/);
    await expect(
      startConsole({ connectionString: databaseUrl(), schema: 'no_such_schema', port: 0 }),
    ).rejects.toThrow(/tool-ledger migrate --schema no_such_schema/);
  });
});
