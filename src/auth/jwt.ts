import { createHmac, createPublicKey, type KeyObject, timingSafeEqual, verify } from 'node:crypto';

/**
 * How a bearer token (a JWT) is verified before a tenant, user or role is taken from its claims. Give exactly one of
 * `secret`, `publicKey` and `jwksUrl`: the key fixes the algorithm, the token never chooses it.
 */
export interface TokenVerification {
  /** HS256: the shared secret. */
  readonly secret?: string;
  /** RS256 or ES256: the issuer's public key, as PEM. */
  readonly publicKey?: string;
  /** RS256 or ES256: the issuer's JSON Web Key Set, fetched over HTTP(S) and cached; keys are picked by `kid`. */
  readonly jwksUrl?: string;
  /** When set, the token's `iss` must equal it. */
  readonly issuer?: string;
  /** When set, the token's `aud` must be or contain it. */
  readonly audience?: string;
}

/** The claims of a valid token, or why it is refused (the reason is for logs; clients get a plain 401). */
export type Verified = { readonly claims: Record<string, unknown> } | { readonly refused: string };

/** A JWT split into its parts, its JSON decoded but nothing about it trusted yet. */
export interface DecodedJwt {
  readonly header: Record<string, unknown>;
  readonly claims: Record<string, unknown>;
  /** The bytes the signature covers: `header.payload` as sent. */
  readonly signed: Buffer;
  readonly signature: Buffer;
}

function decodePart(part: string): Record<string, unknown> {
  const value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as unknown;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error('not a JSON object');
  return value as Record<string, unknown>;
}

/** Splits and decodes a compact JWT, or says why it is not one. */
export function decodeJwt(token: string): DecodedJwt | { readonly refused: string } {
  const parts = token.split('.');
  if (parts.length !== 3) return { refused: 'not a JWT' };
  const [head, body, signature] = parts as [string, string, string];
  try {
    return {
      header: decodePart(head),
      claims: decodePart(body),
      signed: Buffer.from(`${head}.${body}`),
      signature: Buffer.from(signature, 'base64url'),
    };
  } catch {
    return { refused: 'malformed JWT' };
  }
}

/** The algorithm an asymmetric key verifies: ES256 for an EC key, RS256 for RSA. */
export function algorithmOf(key: KeyObject): 'ES256' | 'RS256' {
  return key.asymmetricKeyType === 'ec' ? 'ES256' : 'RS256';
}

/** Checks the signature with a public key (RS256 or ES256, as the key's type says); undefined when it holds. */
export function checkPublicKeySignature(jwt: DecodedJwt, key: KeyObject): string | undefined {
  const wanted = algorithmOf(key);
  if (jwt.header.alg !== wanted) return `algorithm ${String(jwt.header.alg)} where ${wanted} is configured`;
  const ok = verify(
    'sha256',
    jwt.signed,
    wanted === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key,
    jwt.signature,
  );
  return ok ? undefined : 'bad signature';
}

function checkSecretSignature(jwt: DecodedJwt, secret: string): string | undefined {
  if (jwt.header.alg !== 'HS256') return `algorithm ${String(jwt.header.alg)} where HS256 is configured`;
  const expected = createHmac('sha256', secret).update(jwt.signed).digest();
  if (expected.length !== jwt.signature.length || !timingSafeEqual(expected, jwt.signature))
    return 'bad signature';
  return undefined;
}

/** Checks the time window, issuer and audience of a token whose signature holds. */
export function checkClaims(
  claims: Record<string, unknown>,
  options: Pick<TokenVerification, 'issuer' | 'audience'>,
  now: number,
): Verified {
  if (typeof claims.exp === 'number' && now >= claims.exp) return { refused: 'expired' };
  if (typeof claims.nbf === 'number' && now < claims.nbf) return { refused: 'not valid yet' };
  if (options.issuer !== undefined && claims.iss !== options.issuer) return { refused: 'wrong issuer' };
  if (options.audience !== undefined) {
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(options.audience)) return { refused: 'wrong audience' };
  }
  return { claims };
}

/**
 * Verifies a token with a key at hand: the shared secret or the PEM public key (a JWKS needs a fetch, see
 * `createTokenVerifier` in jwks.ts). `now` is in seconds since the epoch.
 */
export function verifyToken(token: string, options: TokenVerification, now = Date.now() / 1000): Verified {
  const jwt = decodeJwt(token);
  if ('refused' in jwt) return jwt;
  let refused: string | undefined;
  if (options.secret !== undefined) {
    refused = checkSecretSignature(jwt, options.secret);
  } else if (options.publicKey !== undefined) {
    let key: KeyObject;
    try {
      key = createPublicKey(options.publicKey);
    } catch {
      return { refused: 'the configured public key cannot be read' };
    }
    refused = checkPublicKeySignature(jwt, key);
  } else {
    return { refused: 'no key configured' };
  }
  return refused === undefined ? checkClaims(jwt.claims, options, now) : { refused };
}
