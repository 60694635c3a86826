import { afterAll, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/ledger.js';
import { catchWarnings } from '../support/warnings.js';

// resolveConfig({}, {}) picks the implicit in-memory ledger, which warns (once per process) on purpose: caught
// for the whole file, so the warning is counted below instead of printed.
const inMemoryWarning = catchWarnings('TOOL_LEDGER_IN_MEMORY');
afterAll(() => inMemoryWarning.restore());

describe('resolveConfig', () => {
  it('resolves documented defaults and freezes them', () => {
    const config = resolveConfig({}, {});
    expect(config).toMatchObject({
      schema: 'tool_ledger',
      ttlSeconds: 86400,
      leaseSeconds: 30,
      waitSeconds: 10,
    });
    expect(config.database).toEqual({ kind: 'pglite', pglite: undefined });
    expect(config.distribute).toBe(false);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('uses DATABASE_URL when no database option is given', () => {
    expect(resolveConfig({}, { DATABASE_URL: 'postgres://x/db' }).database).toEqual({
      kind: 'connectionString',
      connectionString: 'postgres://x/db',
    });
    expect(resolveConfig({ pglite: 'memory://' }, { DATABASE_URL: 'postgres://x/db' }).database.kind).toBe(
      'pglite',
    );
  });

  it('takes a multi-host URL, from the option or DATABASE_URL, as it was given', () => {
    const url = 'postgres://app@db-a:5432,db-b:5433/app?target_session_attrs=read-write&connect_timeout=2';
    expect(resolveConfig({ connectionString: url }, {}).database).toEqual({
      kind: 'connectionString',
      connectionString: url,
    });
    expect(resolveConfig({}, { DATABASE_URL: url }).database).toEqual({
      kind: 'connectionString',
      connectionString: url,
    });
  });

  it.each([
    [
      'connectionString',
      { connectionString: 'postgres://u:pw1234@a,b/app?target_session_attrs=standby' },
      {},
    ],
    [
      'DATABASE_URL',
      {},
      { DATABASE_URL: 'postgres://u:pw1234@a:1,b:2/app?target_session_attrs=prefer-standby' },
    ],
  ])(
    'refuses a standby target in %s with CONFIG_INVALID, naming the source and why',
    (source, options, env) => {
      const error = (() => {
        try {
          resolveConfig(options, env);
        } catch (caught) {
          return caught as Error & { code?: string };
        }
        throw new Error('expected a throw');
      })();
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.message).toMatch(new RegExp(`^${source}: target_session_attrs=.*a ledger writes`));
      expect(error.message).not.toContain('pw1234');
    },
  );

  it.each([
    [{ schema: 'bad-name' }, /schema/],
    [{ schema: 'a"; DROP' }, /schema/],
    [{ ttlSeconds: -1 }, /ttlSeconds/],
    [{ leaseSeconds: 0 }, /leaseSeconds/],
    [{ waitSeconds: Number.NaN }, /waitSeconds/],
    [{ connectionString: 'postgres://a', pglite: 'memory://' }, /only one/],
    [{ poolSize: 0 }, /poolSize/],
    [{ leaseSecond: 5 }, /no option "leaseSecond"; did you mean "leaseSeconds"/],
    [{ waitSeconds: 30 * 86_400 }, /waitSeconds/],
    [{ connectTimeoutSeconds: 3e6 }, /connectTimeoutSeconds/],
    [{ ttlSeconds: 1e12 }, /ttlSeconds/],
    [{ connectionString: 'definitely not a url' }, /connection string/],
    [{ connectionString: 'postgres://a:1,b:2,c:3/db?port=1,2' }, /3 hosts and 2 ports/],
    [{ connectionString: 'postgres://a:1,b:x/db' }, /port "x"/],
    [{ pglite: 'memory://', distribute: true }, /distribute: true needs a Citus coordinator; PGlite/],
    [{ connectionString: 'postgres://a/db', distribute: true, migrate: false }, /migrate --distribute/],
    [
      { connectionString: 'postgres://a/db', distribute: true, layout: 'partitioned' },
      /partitioned layout cannot be distributed with Citus/,
    ],
    [{ connectionString: 'postgres://a/db', distribute: 'yes' }, /distribute must be true or false/],
  ])('refuses %o with CONFIG_INVALID', (options, message) => {
    expect(() => resolveConfig(options as never, {})).toThrow(message);
    try {
      resolveConfig(options as never, {});
    } catch (error) {
      expect(error).toMatchObject({ code: 'CONFIG_INVALID', retryable: false });
    }
  });

  it('refuses the implicit in-memory ledger in production, saying what to pass', () => {
    expect(() => resolveConfig({}, { NODE_ENV: 'production' })).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: expect.stringMatching(/connectionString.*DATABASE_URL/),
      }),
    );
    expect(resolveConfig({ pglite: 'memory://' }, { NODE_ENV: 'production' }).database.kind).toBe('pglite');
  });

  it('warns once elsewhere', () => {
    resolveConfig({}, {});
    resolveConfig({}, {});
    // The first test of this file warned already: one warning per process, whatever follows.
    expect(inMemoryWarning.caught).toHaveLength(1);
    expect(inMemoryWarning.caught[0]).toContain('in-memory PGlite');
  });
});
