import { createHmac, createPublicKey, type KeyObject, timingSafeEqual, verify } from 'node:crypto';

/** How the gateway verifies a bearer token (a JWT) before it takes the tenant or user from its claims. */
export interface TokenVerification {
  /** HS256: the shared secret. Give this or `publicKey`. */
  readonly secret?: string;
  /** RS256 or ES256: the issuer's public key, as PEM. */
  readonly publicKey?: string;
  /** When set, the token's `iss` must equal it. */
  readonly issuer?: string;
  /** When set, the token's `aud` must be or contain it. */
  readonly audience?: string;
}

function decodePart(part: string): Record<string, unknown> {
  const value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as unknown;
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error('not a JSON object');
  return value as Record<string, unknown>;
}

/** The claims of a valid token, or why it is refused (the reason is for logs; clients get a plain 401). */
export function verifyToken(
  token: string,
  options: TokenVerification,
  now = Date.now() / 1000,
): { readonly claims: Record<string, unknown> } | { readonly refused: string } {
  const parts = token.split('.');
  if (parts.length !== 3) return { refused: 'not a JWT' };
  const [head, body, signature] = parts as [string, string, string];
  let header: Record<string, unknown>;
  let claims: Record<string, unknown>;
  try {
    header = decodePart(head);
    claims = decodePart(body);
  } catch {
    return { refused: 'malformed JWT' };
  }
  const signed = Buffer.from(`${head}.${body}`);
  const given = Buffer.from(signature, 'base64url');
  const alg = header.alg;
  // The algorithm is fixed by the configured key, never chosen by the token (no "none", no HS256-with-a-public-key).
  if (options.secret !== undefined) {
    if (alg !== 'HS256') return { refused: `algorithm ${String(alg)} where HS256 is configured` };
    const expected = createHmac('sha256', options.secret).update(signed).digest();
    if (expected.length !== given.length || !timingSafeEqual(expected, given))
      return { refused: 'bad signature' };
  } else if (options.publicKey !== undefined) {
    let key: KeyObject;
    try {
      key = createPublicKey(options.publicKey);
    } catch {
      return { refused: 'the configured public key cannot be read' };
    }
    const wanted = key.asymmetricKeyType === 'ec' ? 'ES256' : 'RS256';
    if (alg !== wanted) return { refused: `algorithm ${String(alg)} where ${wanted} is configured` };
    const ok = verify('sha256', signed, wanted === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' } : key, given);
    if (!ok) return { refused: 'bad signature' };
  } else {
    return { refused: 'no key configured' };
  }
  if (typeof claims.exp === 'number' && now >= claims.exp) return { refused: 'expired' };
  if (typeof claims.nbf === 'number' && now < claims.nbf) return { refused: 'not valid yet' };
  if (options.issuer !== undefined && claims.iss !== options.issuer) return { refused: 'wrong issuer' };
  if (options.audience !== undefined) {
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    if (!aud.includes(options.audience)) return { refused: 'wrong audience' };
  }
  return { claims };
}
