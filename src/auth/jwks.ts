import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { ToolLedgerError } from '../contract/errors.js';
import {
  checkClaims,
  checkPublicKeySignature,
  decodeJwt,
  type TokenVerification,
  type Verified,
  verifyToken,
} from './jwt.js';

/** How a JSON Web Key Set is fetched and kept. */
export interface JwksOptions {
  /** Keep a fetched key set this long. @default 600000 (10 minutes) */
  readonly cacheMs?: number;
  /** A token naming a `kid` the cached set lacks refetches the set, at most this often (key rotation). @default 30000 */
  readonly refetchMinMs?: number;
  /** Give up on one fetch after this long. @default 5000 */
  readonly timeoutMs?: number;
  /** The fetch to use. @default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

interface KeySet {
  readonly keys: ReadonlyMap<string, KeyObject>;
  /** Keys without a `kid`, used only when the set holds exactly one key. */
  readonly unnamed: readonly KeyObject[];
  readonly fetchedAt: number;
}

/** Reads the signing keys of a JWKS document; keys of other uses or types are left out. */
function parseKeySet(body: unknown, fetchedAt: number): KeySet {
  const list = (body as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(list)) throw new Error('the document has no "keys" array');
  const keys = new Map<string, KeyObject>();
  const unnamed: KeyObject[] = [];
  for (const jwk of list as Record<string, unknown>[]) {
    if (jwk === null || typeof jwk !== 'object') continue;
    if (jwk.use !== undefined && jwk.use !== 'sig') continue;
    if (jwk.kty !== 'RSA' && jwk.kty !== 'EC') continue;
    let key: KeyObject;
    try {
      key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    } catch {
      continue;
    }
    if (typeof jwk.kid === 'string') keys.set(jwk.kid, key);
    else unnamed.push(key);
  }
  return { keys, unnamed, fetchedAt };
}

/** A JWKS URL's keys, fetched when first needed, cached, and refetched for an unknown `kid` (bounded in rate). */
export class JwksKeys {
  readonly #url: string;
  readonly #cacheMs: number;
  readonly #refetchMinMs: number;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  #set: KeySet | undefined;
  #lastFetch = -Infinity;
  #pending: Promise<KeySet> | undefined;

  constructor(url: string, options: JwksOptions = {}) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch (cause) {
      throw new ToolLedgerError(
        'CONFIG_INVALID',
        `The JWKS URL ${url} is not a URL; give https://issuer/.well-known/jwks.json.`,
        { cause },
      );
    }
    if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
      throw new ToolLedgerError('CONFIG_INVALID', `The JWKS URL must be http(s), not ${parsed.protocol}.`);
    this.#url = parsed.href;
    this.#cacheMs = options.cacheMs ?? 600_000;
    this.#refetchMinMs = options.refetchMinMs ?? 30_000;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  async #load(now: number): Promise<KeySet> {
    // One fetch at a time: a burst of requests with a new kid shares it.
    if (this.#pending) return this.#pending;
    this.#lastFetch = now;
    this.#pending = (async () => {
      const response = await this.#fetch(this.#url, {
        signal: AbortSignal.timeout(this.#timeoutMs),
        headers: { accept: 'application/json' },
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const set = parseKeySet(await response.json(), now);
      this.#set = set;
      return set;
    })().finally(() => {
      this.#pending = undefined;
    });
    return this.#pending;
  }

  /** The key for a token's `kid` (or the set's only key when the token names none), or why there is none. */
  async key(kid: unknown, now = Date.now()): Promise<KeyObject | { readonly refused: string }> {
    const pick = (set: KeySet): KeyObject | undefined => {
      if (typeof kid === 'string') return set.keys.get(kid);
      const all = [...set.keys.values(), ...set.unnamed];
      return all.length === 1 ? all[0] : undefined;
    };
    let set = this.#set;
    try {
      if (set === undefined || now - set.fetchedAt >= this.#cacheMs) set = await this.#load(now);
      let found = pick(set);
      if (found === undefined && now - this.#lastFetch >= this.#refetchMinMs) {
        set = await this.#load(now);
        found = pick(set);
      }
      if (found !== undefined) return found;
    } catch (error) {
      // A key set that cannot be fetched refuses the token; a stale set still serves the kids it knows.
      const stale = set === undefined ? undefined : pick(set);
      if (stale !== undefined) return stale;
      return { refused: `the JWKS cannot be fetched (${(error as Error).message})` };
    }
    return { refused: typeof kid === 'string' ? `no key "${kid}" in the JWKS` : 'the token names no kid' };
  }
}

/** Verifies bearer tokens: `now` in seconds since the epoch. */
export type TokenVerifier = (token: string, now?: number) => Promise<Verified>;

/**
 * One verifier for a configuration, holding its JWKS cache when `jwksUrl` is given. Throws CONFIG_INVALID unless
 * exactly one of `secret`, `publicKey` and `jwksUrl` is set.
 */
export function createTokenVerifier(options: TokenVerification, jwks: JwksOptions = {}): TokenVerifier {
  const given = [options.secret, options.publicKey, options.jwksUrl].filter((v) => v !== undefined);
  if (given.length !== 1) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      'Token verification needs exactly one of a secret (HS256), a public key (PEM) or a JWKS URL.',
    );
  }
  if (options.jwksUrl === undefined) return async (token, now) => verifyToken(token, options, now);
  const keys = new JwksKeys(options.jwksUrl, jwks);
  return async (token, now = Date.now() / 1000) => {
    const jwt = decodeJwt(token);
    if ('refused' in jwt) return jwt;
    const key = await keys.key(jwt.header.kid, now * 1000);
    if ('refused' in key) return key;
    const refused = checkPublicKeySignature(jwt, key);
    return refused === undefined ? checkClaims(jwt.claims, options, now) : { refused };
  };
}
