import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createTokenVerifier, type TokenVerifier } from '../auth/jwks.js';
import type { ConsoleRole, ResolvedConsoleOptions } from './options.js';

/** Who is asking: the actor every write records, and what they may do. */
export interface Identity {
  readonly actor: string;
  readonly role: ConsoleRole;
  /** A digest of the credential, to bind CSRF tokens to it; never the credential. */
  readonly binding: string;
  /** Signed in by a cookie (the sign-in form), rather than an Authorization header. */
  readonly viaCookie: boolean;
}

/** Why a request has no identity: 401 (no or bad credential) or 403 (valid, but no console role). */
export interface Refusal {
  readonly status: 401 | 403;
  readonly message: string;
  /** For the log: never the credential. */
  readonly reason: string;
}

export const COOKIE = 'tl_console';

const digest = (text: string) => createHash('sha256').update(text).digest();

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) {
      try {
        return decodeURIComponent(v.join('='));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** The credential of a request: `Authorization: Bearer` first, else the sign-in cookie. */
export function credentialOf(req: IncomingMessage): { token: string; viaCookie: boolean } | undefined {
  const header = req.headers.authorization;
  const bearer = typeof header === 'string' ? /^Bearer\s+(\S{1,8192})$/i.exec(header)?.[1] : undefined;
  if (bearer !== undefined) return { token: bearer, viaCookie: false };
  const fromCookie = cookie(req, COOKIE);
  return fromCookie ? { token: fromCookie, viaCookie: true } : undefined;
}

function roleOf(value: unknown): ConsoleRole | undefined {
  const roles = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[\s,]+/) : [];
  if (roles.includes('operator')) return 'operator';
  if (roles.includes('viewer')) return 'viewer';
  return undefined;
}

/** Checks credentials as the options say: none (loopback), static tokens, or JWTs. */
export class Authenticator {
  readonly #options: ResolvedConsoleOptions;
  readonly #verifier: TokenVerifier | undefined;
  /** Per process: CSRF tokens are HMACs under it, so a restart signs everyone's forms anew. */
  readonly #csrfKey = randomBytes(32);

  constructor(options: ResolvedConsoleOptions) {
    this.#options = options;
    const auth = options.auth;
    this.#verifier = auth !== undefined && 'jwt' in auth ? createTokenVerifier(auth.jwt) : undefined;
  }

  /** Whether the console asks for credentials at all. */
  get required(): boolean {
    return this.#options.auth !== undefined;
  }

  async identify(req: IncomingMessage): Promise<Identity | Refusal> {
    const auth = this.#options.auth;
    if (auth === undefined) {
      const operator = this.#options.operator;
      return operator === undefined
        ? { actor: 'local viewer', role: 'viewer', binding: 'local', viaCookie: false }
        : { actor: operator, role: 'operator', binding: 'local', viaCookie: false };
    }
    const credential = credentialOf(req);
    if (credential === undefined) return { status: 401, message: 'Sign in first.', reason: 'no credential' };
    return this.check(credential.token, credential.viaCookie);
  }

  /** Checks one credential (a request's, or one typed into the sign-in form). */
  async check(token: string, viaCookie: boolean): Promise<Identity | Refusal> {
    const auth = this.#options.auth;
    const binding = digest(`console:${token}`).toString('hex');
    if (auth === undefined) return { status: 401, message: 'No sign-in here.', reason: 'no auth configured' };
    if ('tokens' in auth) {
      const given = digest(token);
      // Every token is compared, in constant time, so the time taken says nothing of which one nearly matched.
      let found: (typeof auth.tokens)[number] | undefined;
      for (const candidate of auth.tokens)
        if (timingSafeEqual(digest(candidate.token), given)) found = candidate;
      if (found === undefined)
        return { status: 401, message: 'That token is not valid.', reason: 'unknown token' };
      return { actor: found.actor, role: found.role, binding, viaCookie };
    }
    const verified = await (this.#verifier as TokenVerifier)(token);
    if ('refused' in verified)
      return { status: 401, message: 'That token is not valid.', reason: `JWT refused: ${verified.refused}` };
    const role = roleOf(verified.claims[auth.jwt.roleClaim ?? 'roles']);
    const actor = verified.claims[auth.jwt.actorClaim ?? 'sub'];
    if (role === undefined) {
      return {
        status: 403,
        message: `Your token grants no console role: its "${auth.jwt.roleClaim ?? 'roles'}" claim must hold viewer or operator.`,
        reason: 'no role claim',
      };
    }
    if (typeof actor !== 'string' || actor === '') {
      return {
        status: 403,
        message: `Your token names nobody: its "${auth.jwt.actorClaim ?? 'sub'}" claim is empty.`,
        reason: 'no actor claim',
      };
    }
    return { actor, role, binding, viaCookie };
  }

  /** The CSRF token of an identity's forms: an HMAC of its credential's digest. */
  csrfToken(identity: Identity): string {
    return createHmac('sha256', this.#csrfKey).update(identity.binding).digest('base64url');
  }

  /** Whether a form's CSRF token is the identity's. */
  csrfValid(identity: Identity, given: string | undefined): boolean {
    if (typeof given !== 'string') return false;
    const expected = Buffer.from(this.csrfToken(identity));
    const actual = Buffer.from(given);
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }
}
