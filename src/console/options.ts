import type { TokenVerification } from '../auth/jwt.js';
import { ToolLedgerError } from '../contract/errors.js';
import { isValidSchemaName } from '../ledger/sql/names.js';

/** What a signed-in person may do: read, or also decide (resolve, approve, decline) when writes are allowed. */
export type ConsoleRole = 'viewer' | 'operator';

/** A static bearer token: whoever presents it acts as `actor` with `role`. */
export interface ConsoleToken {
  readonly token: string;
  readonly role: ConsoleRole;
  /** The name every write of this token records as its actor. */
  readonly actor: string;
}

/** JWT sign-in: verified as the gateway verifies (secret, PEM key or JWKS URL), the role and actor from claims. */
export interface ConsoleJwt extends TokenVerification {
  /** The claim holding the role: a string or an array of strings holding `operator` or `viewer`. @default 'roles' */
  readonly roleClaim?: string;
  /** The claim naming the person, recorded as the actor of each write. @default 'sub' */
  readonly actorClaim?: string;
}

/** How the console authenticates: static tokens (from a file or the environment) or JWTs. */
export type ConsoleAuth = { readonly tokens: readonly ConsoleToken[] } | { readonly jwt: ConsoleJwt };

export interface ConsoleOptions {
  /** The ledger's Postgres. A read-only role (such as the explorer's reader) suits a console without writes. */
  readonly connectionString: string;
  /** The ledger's schema. @default 'tool_ledger' */
  readonly schema?: string;
  /** The address to listen on. Anything but loopback needs `auth`. @default '127.0.0.1' */
  readonly host?: string;
  /** The port; 0 picks a free one. @default 4320 */
  readonly port?: number;
  /** Let operators resolve, approve and decline. @default false (read-only) */
  readonly allowWrites?: boolean;
  /** Who may use the console. @default none: loopback only */
  readonly auth?: ConsoleAuth;
  /**
   * Without `auth` (loopback only): the name of the one local operator, recorded as the actor of each write. Without
   * it and without `auth`, the console is read-only even with `allowWrites`.
   */
  readonly operator?: string;
  /** Jaeger's query API (and UI), for the run page's trace timeline and links. @default none */
  readonly jaegerUrl?: string;
  /** VictoriaLogs, for the decision records of the trace timeline. @default none */
  readonly logsUrl?: string;
  /** Where `TOOL_LEDGER_KEY_HASH_SECRET` is read. @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** One line per request refused or failed; never a key or a token. @default none */
  readonly log?: (line: string) => void;
}

/** The options resolved and checked, frozen. */
export interface ResolvedConsoleOptions {
  readonly connectionString: string;
  readonly schema: string;
  readonly host: string;
  readonly port: number;
  readonly allowWrites: boolean;
  readonly auth: ConsoleAuth | undefined;
  readonly operator: string | undefined;
  readonly jaegerUrl: string | undefined;
  readonly logsUrl: string | undefined;
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
}

const invalid = (message: string) => new ToolLedgerError('CONFIG_INVALID', message);

/** Whether an address only this machine reaches. */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

const ROLES: readonly ConsoleRole[] = ['viewer', 'operator'];

/**
 * Reads a tokens file (or variable): one token a line, `ROLE ACTOR TOKEN` (role viewer or operator); blank lines
 * and lines starting with # are skipped. Throws CONFIG_INVALID naming the line, never the token.
 */
export function parseTokens(text: string, source: string): ConsoleToken[] {
  const tokens: ConsoleToken[] = [];
  text.split(/\r?\n/).forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const [role, actor, token, ...rest] = trimmed.split(/\s+/);
    if (!ROLES.includes(role as ConsoleRole) || !actor || !token || rest.length > 0) {
      throw invalid(`${source}, line ${i + 1}: write "ROLE ACTOR TOKEN" with ROLE viewer or operator.`);
    }
    if (token.length < 32) {
      throw invalid(
        `${source}, line ${i + 1}: the token is shorter than 32 characters; make one with \`openssl rand -hex 32\`.`,
      );
    }
    tokens.push({ role: role as ConsoleRole, actor, token });
  });
  if (tokens.length === 0) throw invalid(`${source} holds no token.`);
  return tokens;
}

export function resolveConsoleOptions(options: ConsoleOptions): ResolvedConsoleOptions {
  if (typeof options.connectionString !== 'string' || options.connectionString === '')
    throw invalid('The console needs connectionString: the ledger database, for example $DATABASE_URL.');
  const schema = options.schema ?? 'tool_ledger';
  if (!isValidSchemaName(schema))
    throw invalid(`schema ${JSON.stringify(schema)} is not a plain identifier.`);
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 4320;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw invalid(`port ${port} is not a TCP port.`);
  if (options.auth === undefined && !isLoopback(host)) {
    throw invalid(
      `Without authentication the console listens on loopback only, not ${host}: give tokens (--tokens-file) or JWT verification (--jwks-url), or listen on 127.0.0.1.`,
    );
  }
  if (options.auth !== undefined && 'tokens' in options.auth && options.auth.tokens.length === 0)
    throw invalid('auth.tokens is empty: nobody could sign in.');
  if (options.operator !== undefined && options.auth !== undefined)
    throw invalid(
      'operator names the local operator without auth; with auth the actor comes from the identity.',
    );
  if (options.operator !== undefined && options.operator.trim() === '')
    throw invalid('operator is empty: name the person who decides.');
  for (const [name, url] of [
    ['jaegerUrl', options.jaegerUrl],
    ['logsUrl', options.logsUrl],
  ] as const) {
    if (url !== undefined && !/^https?:\/\/[^\s]+$/.test(url))
      throw invalid(`${name} must be an http(s) URL.`);
  }
  return Object.freeze({
    connectionString: options.connectionString,
    schema,
    host,
    port,
    allowWrites: options.allowWrites ?? false,
    auth: options.auth,
    operator: options.operator,
    jaegerUrl: options.jaegerUrl,
    logsUrl: options.logsUrl,
    env: options.env ?? process.env,
    log: options.log ?? (() => {}),
  });
}
