import { createHmac, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTokenVerifier } from '../../src/auth/jwks.js';
import { ToolLedgerError } from '../../src/contract/errors.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const rotated = generateKeyPairSync('ec', { namedCurve: 'P-256' });

function jwt(alg: 'RS256' | 'ES256', key: KeyObject, claims: Record<string, unknown>, kid?: string): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${part({ alg, typ: 'JWT', ...(kid === undefined ? {} : { kid }) })}.${part(claims)}`;
  const signature = sign(
    'sha256',
    Buffer.from(body),
    alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key,
  );
  return `${body}.${signature.toString('base64url')}`;
}

const jwk = (key: KeyObject, kid: string) => ({ ...key.export({ format: 'jwk' }), kid, use: 'sig' });

// A real JWKS endpoint whose key set a test can rotate, counting its fetches.
let keys: object[] = [];
let fetches = 0;
let failing = false;
let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((_req, res) => {
    fetches++;
    if (failing) {
      res.writeHead(503).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('JWT verification by JWKS', () => {
  it('verifies RS256 and ES256 tokens by kid, checks the claims, and caches the set', async () => {
    keys = [jwk(rsa.publicKey, 'r1'), jwk(ec.publicKey, 'e1'), { kty: 'oct', k: 'c2VjcmV0', kid: 'x' }];
    fetches = 0;
    const verify = createTokenVerifier({ jwksUrl: url, audience: 'console', issuer: 'https://idp' });
    const now = Date.now() / 1000;
    const claims = { sub: 'ana', aud: 'console', iss: 'https://idp', exp: now + 60 };
    expect(await verify(jwt('RS256', rsa.privateKey, claims, 'r1'), now)).toEqual({ claims });
    expect(await verify(jwt('ES256', ec.privateKey, claims, 'e1'), now)).toEqual({ claims });
    expect(fetches).toBe(1);
    // The key fixes the algorithm: an RSA key's kid with an ES256 header is refused, and so is HS256 over the
    // public key's bytes and "none".
    expect(await verify(jwt('ES256', ec.privateKey, claims, 'r1'), now)).toEqual({
      refused: 'algorithm ES256 where RS256 is configured',
    });
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const hsBody = `${part({ alg: 'HS256', kid: 'x' })}.${part(claims)}`;
    const hs = `${hsBody}.${createHmac('sha256', 'secret').update(hsBody).digest('base64url')}`;
    expect('refused' in (await verify(hs, now))).toBe(true);
    expect('refused' in (await verify(`${part({ alg: 'none', kid: 'r1' })}.${part(claims)}.`, now))).toBe(
      true,
    );
    expect(await verify(jwt('RS256', rsa.privateKey, { ...claims, aud: 'other' }, 'r1'), now)).toEqual({
      refused: 'wrong audience',
    });
    expect(await verify(jwt('RS256', rsa.privateKey, { ...claims, exp: now - 1 }, 'r1'), now)).toEqual({
      refused: 'expired',
    });
    expect(await verify(jwt('RS256', ec.privateKey, claims, 'r1').replace(/\.[^.]+$/, '.AAAA'), now)).toEqual(
      {
        refused: 'bad signature',
      },
    );
  });

  it('fetches the set again for a new kid after rotation, at most once per interval', async () => {
    keys = [jwk(ec.publicKey, 'e1')];
    fetches = 0;
    const verify = createTokenVerifier({ jwksUrl: url }, { refetchMinMs: 60_000 });
    const now = Date.now() / 1000;
    expect('claims' in (await verify(jwt('ES256', ec.privateKey, { sub: 'a' }, 'e1'), now))).toBe(true);
    keys = [jwk(ec.publicKey, 'e1'), jwk(rotated.publicKey, 'e2')];
    // Within the interval an unknown kid does not refetch: a flood of made-up kids cannot hammer the issuer.
    expect(await verify(jwt('ES256', rotated.privateKey, { sub: 'a' }, 'e2'), now + 1)).toEqual({
      refused: 'no key "e2" in the JWKS',
    });
    expect(fetches).toBe(1);
    expect('claims' in (await verify(jwt('ES256', rotated.privateKey, { sub: 'a' }, 'e2'), now + 61))).toBe(
      true,
    );
    expect(fetches).toBe(2);
  });

  it('refuses tokens when the set cannot be fetched, and keeps serving the kids it already has', async () => {
    keys = [jwk(ec.publicKey, 'e1')];
    failing = true;
    const verify = createTokenVerifier({ jwksUrl: url }, { cacheMs: 1000, refetchMinMs: 0 });
    const now = Date.now() / 1000;
    expect(await verify(jwt('ES256', ec.privateKey, { sub: 'a' }, 'e1'), now)).toEqual({
      refused: 'the JWKS cannot be fetched (HTTP 503)',
    });
    failing = false;
    expect('claims' in (await verify(jwt('ES256', ec.privateKey, { sub: 'a' }, 'e1'), now))).toBe(true);
    failing = true;
    expect('claims' in (await verify(jwt('ES256', ec.privateKey, { sub: 'a' }, 'e1'), now + 5))).toBe(true);
    failing = false;
  });

  it('takes exactly one way to verify, and a JWKS URL that is a URL', () => {
    expect(() => createTokenVerifier({})).toThrow(ToolLedgerError);
    expect(() => createTokenVerifier({ secret: 's', jwksUrl: url })).toThrow(/exactly one/);
    expect(() => createTokenVerifier({ jwksUrl: 'file:///etc/passwd' })).toThrow(/http/);
  });
});
