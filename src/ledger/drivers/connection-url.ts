import { ToolLedgerError } from '../../contract/errors.js';

/**
 * libpq's multi-host connection URLs, which pg 8.x does not read: its parser hands `postgres://a:5432,b:5433/db` to
 * WHATWG `URL`, which refuses the port list, and reads `postgres://a,b/db` as one host named "a,b".
 *
 * Forms read, as libpq documents them (https://www.postgresql.org/docs/current/libpq-connect.html):
 * - hosts in the authority, each with its own port: `postgres://u:pw@h1:5432,h2,[::1]:5433/db`;
 * - hosts and ports as query parameters, which replace the authority's: `postgres:///db?host=h1,h2&port=5432,5433`
 *   (one port for every host, or one per host; an empty item is the default);
 * - percent-encoding anywhere (a socket directory is `%2Fvar%2Frun%2Fpostgresql`);
 * - `target_session_attrs` (any, read-write, primary; the standby values are refused: a ledger writes),
 *   `connect_timeout` (seconds, per host, as libpq counts it) and `load_balance_hosts` (disable, random: libpq 16's
 *   values, each connection trying the hosts in an order of its own).
 * Keyword strings (`host=a,b port=1,2`) are turned into such a URL first (keyword-string.ts): pg reads none.
 */

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** The `target_session_attrs` values a ledger can use: each ends on a server that may accept writes. */
export const TARGET_SESSION_ATTRS = ['any', 'read-write', 'primary'] as const;
export type TargetSessionAttrs = (typeof TARGET_SESSION_ATTRS)[number];

/** libpq 16's `load_balance_hosts`: the hosts in the order written, or in a random order for each connection. */
export const LOAD_BALANCE_HOSTS = ['disable', 'random'] as const;
export type LoadBalanceHosts = (typeof LOAD_BALANCE_HOSTS)[number];

/** libpq's other values, and what each asks for: a server the ledger could not write its claims to. */
const REFUSED_TARGETS: Readonly<Record<string, string>> = {
  'read-only': 'a read-only session',
  standby: 'a standby',
  'prefer-standby': 'a standby whenever one is up',
};

export interface ParsedConnectionUrl {
  readonly user: string | undefined;
  readonly password: string | undefined;
  /** In the order to try them; an empty host or port is resolved to the default (`PGHOST`/`PGPORT`, localhost:5432). */
  readonly hosts: readonly HostPort[];
  readonly database: string | undefined;
  /** Every query parameter, decoded (host and port included, as written). */
  readonly params: Readonly<Record<string, string>>;
  /** @default 'any' (libpq's default) */
  readonly targetSessionAttrs: TargetSessionAttrs;
  /** @default 'disable' (libpq's default) */
  readonly loadBalanceHosts: LoadBalanceHosts;
  /** `connect_timeout` in milliseconds, per host; 0 when it is zero or negative (no bound, as in libpq). */
  readonly hostConnectTimeoutMs: number | undefined;
  /**
   * The URL as pg's own parser should see it: one host (the first) and none of the parameters read here, with the
   * user, password, database and every other parameter as written, so TLS and the rest behave as for one host.
   */
  readonly singleHostUrl: string;
}

/** Parameters this module consumes; pg would otherwise pass `host`/`port` over the host list. */
const CONSUMED = new Set(['host', 'port', 'target_session_attrs', 'connect_timeout', 'load_balance_hosts']);

const SCHEME = /^postgres(?:ql)?:\/\//i;

function invalid(message: string): ToolLedgerError {
  return new ToolLedgerError('CONFIG_INVALID', message);
}

/** The URL's parts as written (nothing decoded), split where libpq splits them. */
interface UrlParts {
  readonly scheme: string;
  /** Between `//` and the last `@` of the authority; undefined without an `@`. */
  readonly userinfo: string | undefined;
  readonly hostspec: string;
  /** From the `/` on, without the query; '' when absent. */
  readonly path: string;
  /** The `k=v` pairs after `?`, as written. */
  readonly query: readonly string[];
}

function splitUrl(text: string): UrlParts | undefined {
  const scheme = SCHEME.exec(text)?.[0];
  if (scheme === undefined) return undefined;
  const rest = text.slice(scheme.length);
  const slash = rest.search(/[/?]/);
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const after = slash < 0 ? '' : rest.slice(slash);
  const at = authority.lastIndexOf('@');
  const question = after.indexOf('?');
  return {
    scheme,
    userinfo: at < 0 ? undefined : authority.slice(0, at),
    hostspec: at < 0 ? authority : authority.slice(at + 1),
    path: question < 0 ? after : after.slice(0, question),
    query:
      question < 0
        ? []
        : after
            .slice(question + 1)
            .split('&')
            .filter((pair) => pair !== ''),
  };
}

function decode(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw invalid(`The connection URL's ${what} has a malformed percent-encoding; encode "%" as %25.`);
  }
}

function queryParams(pairs: readonly string[]): Record<string, string> {
  const params: Record<string, string> = Object.create(null);
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq < 0)
      throw invalid(`The connection URL's query parameter "${decode(pair, 'query')}" has no "=value".`);
    params[decode(pair.slice(0, eq), 'query')] = decode(pair.slice(eq + 1), 'query');
  }
  return params;
}

/** One `host[:port]` of the authority, IPv6 in brackets; both decoded, either may be empty. */
function hostItem(item: string): { host: string; port: string } {
  if (item.startsWith('[')) {
    const close = item.indexOf(']');
    const tail = close < 0 ? '' : item.slice(close + 1);
    if (close < 0 || (tail !== '' && !tail.startsWith(':'))) {
      throw invalid(
        `The connection URL's host "${item}" is not a bracketed IPv6 address such as [::1]:5432.`,
      );
    }
    return { host: decode(item.slice(1, close), 'host'), port: tail.slice(1) };
  }
  const colon = item.indexOf(':');
  return colon < 0
    ? { host: decode(item, 'host'), port: '' }
    : { host: decode(item.slice(0, colon), 'host'), port: decode(item.slice(colon + 1), 'port') };
}

function portNumber(port: string, fallback: number): number {
  if (port === '') return fallback;
  const value = /^\d{1,5}$/.test(port) ? Number(port) : Number.NaN;
  if (!(value >= 1 && value <= 65_535)) {
    throw invalid(`The connection URL names port "${port}"; a port is a number from 1 to 65535.`);
  }
  return value;
}

function targetOf(value: string | undefined): TargetSessionAttrs {
  if (value === undefined) return 'any';
  if ((TARGET_SESSION_ATTRS as readonly string[]).includes(value)) return value as TargetSessionAttrs;
  const refused = REFUSED_TARGETS[value];
  if (refused !== undefined) {
    throw invalid(
      `target_session_attrs=${value} asks for ${refused}, and a ledger writes a claim for every call, so it must reach a server that accepts writes. Use target_session_attrs=read-write (or primary) in the ledger's URL; point read-only tooling at the standby with its own URL.`,
    );
  }
  throw invalid(
    `target_session_attrs=${value} is not a libpq value; use read-write (or primary, or any) in the ledger's URL.`,
  );
}

function timeoutOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\s*-?\d+\s*$/.test(value)) {
    throw invalid(
      `connect_timeout=${value} is not a whole number of seconds (libpq's unit, counted per host).`,
    );
  }
  // libpq: zero or negative waits indefinitely.
  return Math.max(0, Number(value)) * 1000;
}

/** A host as the authority of a URL writes it. */
function urlHost({ host, port }: HostPort): string {
  const name = host.includes(':') ? `[${host}]` : encodeURIComponent(host);
  return `${name}:${port}`;
}

function loadBalanceOf(value: string | undefined): LoadBalanceHosts {
  if (value === undefined) return 'disable';
  if ((LOAD_BALANCE_HOSTS as readonly string[]).includes(value)) return value as LoadBalanceHosts;
  throw invalid(`load_balance_hosts=${value} is not a libpq value; use random (or disable, the default).`);
}

/**
 * Parses a libpq connection URL with any number of hosts. Throws `CONFIG_INVALID` (the message names the part at
 * fault, never the password) for what libpq would refuse and for the `target_session_attrs` a ledger cannot use.
 */
export function parseConnectionUrl(text: string, env: NodeJS.ProcessEnv = process.env): ParsedConnectionUrl {
  const parts = splitUrl(text);
  if (parts === undefined) throw invalid('A connection URL starts with postgres:// or postgresql://.');
  const params = queryParams(parts.query);
  const items = parts.hostspec.split(',').map(hostItem);
  // Query parameters replace the authority's lists, as in libpq (they are read after it).
  const hostList = params.host !== undefined ? params.host.split(',') : items.map((i) => i.host);
  const portList = params.port !== undefined ? params.port.split(',') : items.map((i) => i.port);
  if (portList.length !== 1 && portList.length !== hostList.length) {
    throw invalid(
      `The connection URL names ${hostList.length} hosts and ${portList.length} ports; give one port for every host or one per host.`,
    );
  }
  const defaultHost = env.PGHOST || 'localhost';
  const defaultPort = env.PGPORT && /^\d+$/.test(env.PGPORT) ? Number(env.PGPORT) : 5432;
  const hosts = hostList.map((host, i) => ({
    host: host.trim() === '' ? defaultHost : host.trim(),
    port: portNumber((portList.length === 1 ? portList[0] : portList[i])?.trim() ?? '', defaultPort),
  }));
  let userinfo = parts.userinfo;
  let user: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(':');
    user = decode(colon < 0 ? userinfo : userinfo.slice(0, colon), 'user name') || undefined;
    password = colon < 0 ? undefined : decode(userinfo.slice(colon + 1), 'password');
    userinfo = `${userinfo}@`;
  }
  const database = parts.path.length > 1 ? decode(parts.path.slice(1), 'database name') : undefined;
  const kept = parts.query.filter((pair) => !CONSUMED.has(decode(pair.split('=')[0] ?? '', 'query')));
  const first = hosts[0] as HostPort;
  return {
    user,
    password: password ?? params.password,
    hosts,
    database,
    params,
    targetSessionAttrs: targetOf(params.target_session_attrs),
    loadBalanceHosts: loadBalanceOf(params.load_balance_hosts),
    hostConnectTimeoutMs: timeoutOf(params.connect_timeout),
    singleHostUrl: `${parts.scheme}${userinfo ?? ''}${urlHost(first)}${parts.path}${kept.length > 0 ? `?${kept.join('&')}` : ''}`,
  };
}

/**
 * Whether a connection string needs more than pg reads: several hosts, or a `target_session_attrs` or
 * `load_balance_hosts` at all (a refused value must be refused, not ignored as pg ignores it). Anything else goes
 * to pg exactly as before.
 */
export function isMultiHostUrl(text: string): boolean {
  const parts = splitUrl(text);
  if (parts === undefined) return false;
  if (parts.hostspec.includes(',')) return true;
  return parts.query.some((pair) => {
    const [name = '', value = ''] = pair.split('=');
    return (
      name === 'target_session_attrs' ||
      name === 'load_balance_hosts' ||
      ((name === 'host' || name === 'port') && /,|%2c/i.test(value))
    );
  });
}

/**
 * The connection target when the URL goes beyond one pg host: undefined for a string pg reads as it is (one host
 * and no `target_session_attrs`, or `any`), so single-host strings keep today's path.
 */
export function multiHostTarget(
  text: string,
  env: NodeJS.ProcessEnv = process.env,
): ParsedConnectionUrl | undefined {
  if (!isMultiHostUrl(text)) return undefined;
  const parsed = parseConnectionUrl(text, env);
  return parsed.hosts.length === 1 && parsed.targetSessionAttrs === 'any' ? undefined : parsed;
}

/**
 * A connection URL with its password replaced by `mask` (in the authority and a `password` parameter), or
 * undefined for a string that is not a URL. A URL WHATWG reads keeps that form (what was shown before multi-host
 * URLs); one with a host list is masked in place.
 */
export function maskUrlPassword(text: string, mask: string): string | undefined {
  if (!SCHEME.test(text)) return undefined;
  try {
    const url = new URL(text);
    if (url.password) url.password = mask;
    if (url.searchParams.has('password')) url.searchParams.set('password', mask);
    return url.toString();
  } catch {
    // A host list WHATWG refuses: below.
  }
  const parts = splitUrl(text) as UrlParts;
  const colon = parts.userinfo?.indexOf(':') ?? -1;
  const userinfo =
    parts.userinfo === undefined
      ? ''
      : `${colon < 0 ? parts.userinfo : `${parts.userinfo.slice(0, colon)}:${mask}`}@`;
  const query = parts.query.map((pair) => (/^password=/i.test(pair) ? `password=${mask}` : pair));
  return `${parts.scheme}${userinfo}${parts.hostspec}${parts.path}${query.length > 0 ? `?${query.join('&')}` : ''}`;
}

/** Whether a connection URL carries a password (in the authority or as a parameter); undefined when not a URL. */
export function urlHasPassword(text: string): boolean | undefined {
  const parts = splitUrl(text);
  if (parts === undefined) return undefined;
  const colon = parts.userinfo?.indexOf(':') ?? -1;
  return (
    (colon >= 0 && (parts.userinfo?.length ?? 0) > colon + 1) ||
    parts.query.some((pair) => /^password=/i.test(pair))
  );
}
