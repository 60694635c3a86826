import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ToolLedgerError } from '../../../src/contract/errors.js';
import {
  isMultiHostUrl,
  maskUrlPassword,
  multiHostTarget,
  parseConnectionUrl,
  urlHasPassword,
} from '../../../src/ledger/drivers/connection-url.js';
import { pgConnectOptions } from '../../../src/ledger/drivers/pg-connect.js';
import { readWriteClient } from '../../../src/ledger/drivers/read-write.js';

const env = {};

describe('parseConnectionUrl', () => {
  it.each([
    {
      url: 'postgres://app:s3cret@db-a:5432,db-b:5433/ledger?target_session_attrs=read-write&connect_timeout=3',
      hosts: [
        { host: 'db-a', port: 5432 },
        { host: 'db-b', port: 5433 },
      ],
      user: 'app',
      password: 's3cret',
      database: 'ledger',
      target: 'read-write',
      timeoutMs: 3000,
      single: 'postgres://app:s3cret@db-a:5432/ledger',
    },
    {
      url: 'postgresql://db-a,db-b:6432/app',
      hosts: [
        { host: 'db-a', port: 5432 },
        { host: 'db-b', port: 6432 },
      ],
      user: undefined,
      password: undefined,
      database: 'app',
      target: 'any',
      timeoutMs: undefined,
      single: 'postgresql://db-a:5432/app',
    },
    {
      url: 'postgres://u@[::1]:5433,[fe80::1%25eth0],10.0.0.2/db',
      hosts: [
        { host: '::1', port: 5433 },
        { host: 'fe80::1%eth0', port: 5432 },
        { host: '10.0.0.2', port: 5432 },
      ],
      user: 'u',
      password: undefined,
      database: 'db',
      target: 'any',
      timeoutMs: undefined,
      single: 'postgres://u@[::1]:5433/db',
    },
    {
      // Percent-encoded user, password, database and a socket directory as a host.
      url: 'postgres://us%40r:p%40ss%3Aw%2Fd@%2Fvar%2Frun%2Fpostgresql,db-b/my%20db?application_name=x%26y',
      hosts: [
        { host: '/var/run/postgresql', port: 5432 },
        { host: 'db-b', port: 5432 },
      ],
      user: 'us@r',
      password: 'p@ss:w/d',
      database: 'my db',
      target: 'any',
      timeoutMs: undefined,
      single:
        'postgres://us%40r:p%40ss%3Aw%2Fd@%2Fvar%2Frun%2Fpostgresql:5432/my%20db?application_name=x%26y',
    },
    {
      // The query forms replace the authority's hosts and ports; one port serves every host.
      url: 'postgres:///app?host=db-a,db-b,db-c&port=6543&target_session_attrs=primary&sslmode=disable',
      hosts: [
        { host: 'db-a', port: 6543 },
        { host: 'db-b', port: 6543 },
        { host: 'db-c', port: 6543 },
      ],
      user: undefined,
      password: undefined,
      database: 'app',
      target: 'primary',
      timeoutMs: undefined,
      single: 'postgres://db-a:6543/app?sslmode=disable',
    },
    {
      url: 'postgres://u:pw@ignored/app?host=a%2Cb&port=1,2&password=other&connect_timeout=0',
      hosts: [
        { host: 'a', port: 1 },
        { host: 'b', port: 2 },
      ],
      user: 'u',
      password: 'pw',
      database: 'app',
      target: 'any',
      timeoutMs: 0,
      single: 'postgres://u:pw@a:1/app?password=other',
    },
    {
      // An empty item is the default host or port.
      url: 'postgres://,db-b:/app?port=,7000&connect_timeout=-1',
      hosts: [
        { host: 'localhost', port: 5432 },
        { host: 'db-b', port: 7000 },
      ],
      user: undefined,
      password: undefined,
      database: 'app',
      target: 'any',
      timeoutMs: 0,
      single: 'postgres://localhost:5432/app',
    },
  ])('$url', ({ url, hosts, user, password, database, target, timeoutMs, single }) => {
    const parsed = parseConnectionUrl(url, env);
    expect(parsed.hosts).toEqual(hosts);
    expect(parsed.user).toBe(user);
    expect(parsed.password).toBe(password);
    expect(parsed.database).toBe(database);
    expect(parsed.targetSessionAttrs).toBe(target);
    expect(parsed.hostConnectTimeoutMs).toBe(timeoutMs);
    expect(parsed.singleHostUrl).toBe(single);
  });

  it('reads load_balance_hosts (disable by default) and keeps it from pg', () => {
    expect(parseConnectionUrl('postgres://a,b/db', env).loadBalanceHosts).toBe('disable');
    const parsed = parseConnectionUrl('postgres://a,b/db?load_balance_hosts=random&sslmode=disable', env);
    expect(parsed.loadBalanceHosts).toBe('random');
    expect(parsed.singleHostUrl).toBe('postgres://a:5432/db?sslmode=disable');
    expect(() => multiHostTarget('postgres://db/app?load_balance_hosts=sometimes', env)).toThrow(
      /load_balance_hosts=sometimes/,
    );
  });

  it('takes PGHOST and PGPORT for empty items, as pg does for one host', () => {
    const parsed = parseConnectionUrl('postgres://,b/db', { PGHOST: 'pg-default', PGPORT: '6000' });
    expect(parsed.hosts).toEqual([
      { host: 'pg-default', port: 6000 },
      { host: 'b', port: 6000 },
    ]);
  });

  it.each([
    ['standby', /asks for a standby.*a ledger writes.*read-write/],
    ['read-only', /asks for a read-only session.*read-write/],
    ['prefer-standby', /asks for a standby whenever one is up.*read-write/],
    ['readwrite', /not a libpq value.*read-write/],
  ])('refuses target_session_attrs=%s with CONFIG_INVALID saying why', (value, message) => {
    const url = `postgres://u:topsecret@a:5432,b:5432/db?target_session_attrs=${value}`;
    const error = catchError(() => parseConnectionUrl(url, env));
    expect(error).toBeInstanceOf(ToolLedgerError);
    expect((error as ToolLedgerError).code).toBe('CONFIG_INVALID');
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('topsecret');
  });

  it.each([
    ['postgres://u:topsecret@a:1,b:2,c:3/db?port=1,2', /3 hosts and 2 ports/],
    ['postgres://u:topsecret@a:99999,b/db', /port "99999"/],
    ['postgres://u:topsecret@a:x,b/db', /port "x"/],
    ['postgres://u:topsecret@[::1,b/db', /bracketed IPv6/],
    ['postgres://u:topsecret@[::1]x,b/db', /bracketed IPv6/],
    ['postgres://u:topsecret@a,b/db?connect_timeout=2.5', /connect_timeout=2.5 is not a whole number/],
    ['postgres://u:topsecret@a,b/db?sslmode', /"sslmode" has no "=value"/],
    ['postgres://u:topsecret@a,b/d%zzb', /database name has a malformed percent-encoding/],
    [
      'postgres://u:topsecret@a,b/db?load_balance_hosts=shuffle',
      /load_balance_hosts=shuffle is not a libpq value/,
    ],
    ['mysql://a,b/db', /starts with postgres:\/\//],
  ])('refuses %s', (url, message) => {
    const error = catchError(() => parseConnectionUrl(url, env));
    expect((error as ToolLedgerError).code).toBe('CONFIG_INVALID');
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain('topsecret');
  });

  it('parses back every host list, user, password and database it is given (percent-encoded)', () => {
    const name = fc.stringMatching(/^[a-z0-9-]{1,20}$/);
    const host = fc.oneof(
      fc
        .tuple(name, fc.constantFrom('', '.example.com'))
        .map(([a, b]) => ({ raw: `${a}${b}`, written: `${a}${b}` })),
      fc.ipV6().map((ip) => ({ raw: ip, written: `[${ip}]` })),
      fc.ipV4().map((ip) => ({ raw: ip, written: ip })),
    );
    const item = fc.record({ host, port: fc.integer({ min: 1, max: 65_535 }) });
    fc.assert(
      fc.property(
        fc.array(item, { minLength: 1, maxLength: 5 }),
        fc.string({ minLength: 1, maxLength: 12 }),
        fc.string({ maxLength: 12 }),
        fc.string({ minLength: 1, maxLength: 12 }),
        (items, user, password, database) => {
          // WHATWG (and so pg's own parser, for one host too) reads a database "." or ".." as a dot segment.
          fc.pre(database !== '.' && database !== '..');
          const hosts = items.map(({ host: h, port }) => `${h.written}:${port}`).join(',');
          const url = `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${hosts}/${encodeURIComponent(database)}?target_session_attrs=read-write`;
          const parsed = parseConnectionUrl(url, env);
          expect(parsed.hosts).toEqual(items.map(({ host: h, port }) => ({ host: h.raw, port })));
          expect(parsed.user).toBe(user);
          expect(parsed.password).toBe(password);
          expect(parsed.database).toBe(database);
          expect(parsed.targetSessionAttrs).toBe('read-write');
          // The one-host form is one WHATWG accepts, with the same user, password and database.
          const single = new URL(parsed.singleHostUrl);
          expect(decodeURIComponent(single.username)).toBe(user);
          expect(decodeURIComponent(single.password)).toBe(password);
          expect(decodeURIComponent(single.pathname.slice(1))).toBe(database);
          // Masked, the mask stands in the password's place and the rest still parses (WHATWG may normalise a
          // lone IPv6 address, so only the ports are compared).
          const masked = parseConnectionUrl(maskUrlPassword(url, '***') as string, env);
          if (password.length > 0) expect(masked.password).toBe('***');
          expect(masked.user).toBe(user);
          expect(masked.hosts.map((h) => h.port)).toEqual(parsed.hosts.map((h) => h.port));
        },
      ),
    );
  });
});

describe('which strings take the multi-host path', () => {
  it.each([
    ['postgres://u@db:5432/app', false],
    ['postgres://u@db:5432/app?target_session_attrs=any', false],
    ['postgres:///app?host=/tmp&port=5433', false],
    ['host=a,b port=1,2 dbname=x', false],
    ['/var/run/postgresql app', false],
    ['postgres://u@db:5432/app?target_session_attrs=read-write', true],
    ['postgres://u@a,b/app', true],
    ['postgres:///app?host=a,b', true],
    ['postgres:///app?host=a%2Cb', true],
  ])('%s: %s', (url, multi) => {
    expect(multiHostTarget(url, env) !== undefined).toBe(multi);
  });

  it('refuses a standby target even for one host, rather than ignore it as pg does', () => {
    expect(isMultiHostUrl('postgres://db/app?target_session_attrs=standby')).toBe(true);
    expect(() => multiHostTarget('postgres://db/app?target_session_attrs=standby', env)).toThrow(
      /a ledger writes/,
    );
  });
});

describe('maskUrlPassword and urlHasPassword', () => {
  it.each([
    ['postgres://u:pw@db:5432/app', 'postgres://u:***@db:5432/app', true],
    ['postgres://u@db:5432/app?password=pw', 'postgres://u@db:5432/app?password=***', true],
    ['postgres://u:pw@a:1,b:2/app', 'postgres://u:***@a:1,b:2/app', true],
    [
      'postgres://u@a:1,[::1]:2/app?password=pw&target_session_attrs=read-write',
      'postgres://u@a:1,[::1]:2/app?password=***&target_session_attrs=read-write',
      true,
    ],
    ['postgres://u:p%40w@a:1,b:2/app', 'postgres://u:***@a:1,b:2/app', true],
    ['postgres://u@a:1,b:2/app', 'postgres://u@a:1,b:2/app', false],
  ])('%s', (url, masked, has) => {
    expect(maskUrlPassword(url, '***')).toBe(masked);
    expect(urlHasPassword(url)).toBe(has);
  });

  it('says undefined for what is not a URL', () => {
    expect(maskUrlPassword('host=a password=x', '***')).toBeUndefined();
    expect(urlHasPassword('host=a password=x')).toBeUndefined();
  });
});

describe('pgConnectOptions', () => {
  class Client {}

  it('hands a one-host string to pg as it is, with the connect timeout as before', () => {
    const url = 'postgres://u:pw@db:5432/app?sslmode=disable&connect_timeout=9';
    expect(pgConnectOptions(Client, url, 5000, env)).toEqual({
      connectionString: url,
      connectionTimeoutMillis: 5000,
    });
  });

  it('gives a host list a client class, the one-host URL, and a bound of every host plus the chosen one', () => {
    const url = 'postgres://u:pw@a:1,b:2,c:3/app?target_session_attrs=read-write';
    const options = pgConnectOptions(Client, url, 5000, env);
    expect(options.connectionString).toBe('postgres://u:pw@a:1/app');
    expect(options.connectionTimeoutMillis).toBe(20_000);
    expect(options.Client).not.toBe(Client);
    expect(new (options.Client as typeof Client)()).toBeInstanceOf(Client);
  });

  it('counts connect_timeout from the URL per host', () => {
    const options = pgConnectOptions(Client, 'postgres://a,b/app?connect_timeout=2', 5000, env);
    expect(options.connectionTimeoutMillis).toBe(6000);
  });
});

describe('readWriteClient options', () => {
  class Client {}

  it.each([
    [{ targetSessionAttrs: 'standby' }, /never a standby/],
    [{ hostConnectTimeoutMs: -1 }, /hostConnectTimeoutMs must be/],
    [{ loadBalanceHosts: 'round-robin' }, /loadBalanceHosts "round-robin" is not one of/],
  ])('refuses %o with CONFIG_INVALID', (options, message) => {
    const error = catchError(() => readWriteClient(Client, [{ host: 'a', port: 1 }], options as never));
    expect((error as ToolLedgerError).code).toBe('CONFIG_INVALID');
    expect((error as Error).message).toMatch(message);
  });

  it('refuses an empty host list', () => {
    expect(() => readWriteClient(Client, [])).toThrow(/at least one/);
  });
});

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}
