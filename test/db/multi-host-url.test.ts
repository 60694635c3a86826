// A libpq multi-host URL wherever a database URL is taken: createLedger, DATABASE_URL, the CLI. Against the real
// Postgres of the tests, with a host that refuses connections listed first, so the URL's host list is what makes
// the ledger work. The failover to a promoted standby is test/faults/failover.test.ts.
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, isToolLedgerError } from '../../src/index.js';
import { pgConnectOptions } from '../../src/ledger/drivers/pg-connect.js';
import { startProxy } from '../faults/support/proxy.js';
import { CLI_BIN, ensureBuiltCli } from '../ops/support/cli-build.js';
import { freePort } from '../ops/support/processes.js';
import { databaseUrl, postgresBackend, uniqueSchema } from '../support/db.js';

const backend = postgresBackend();

/** The tests' URL with `before` (host:port items) listed ahead of its own host, and `params` added. */
function multiHost(before: readonly string[], params: string, withPassword = true): string {
  const url = new URL(databaseUrl());
  const password = withPassword && url.password ? `:${url.password}` : '';
  const userinfo = url.username ? `${url.username}${password}@` : '';
  const query = [url.search.slice(1), params].filter((p) => p !== '').join('&');
  return `${url.protocol}//${userinfo}${[...before, url.host].join(',')}${url.pathname}?${query}`;
}

let refusing: string;
beforeAll(async () => {
  // A port nothing listens on: connections to it are refused at once.
  refusing = `127.0.0.1:${await freePort()}`;
});

describe('createLedger with a multi-host URL', () => {
  it('skips a host that refuses and runs calls on the next, with target_session_attrs=read-write', async () => {
    const schema = uniqueSchema('mh');
    const url = multiHost([refusing], 'target_session_attrs=read-write&connect_timeout=2');
    const ledger = await createLedger({ connectionString: url, schema, telemetry: false });
    try {
      let runs = 0;
      const tool = ledger.tool({ name: 'count', kind: 'mutation', handler: async () => ++runs });
      expect(await tool.invoke({}, { key: 'k1' })).toMatchObject({ outcome: 'executed', value: 1 });
      expect(await tool.invoke({}, { key: 'k1' })).toMatchObject({ outcome: 'replayed', value: 1 });
      const rows = await backend.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".tool_runs`);
      expect(rows[0]?.n).toBe(1);
      expect(ledger.config.database).toMatchObject({ kind: 'connectionString' });
    } finally {
      await ledger.close();
      await backend.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });

  it('takes the same URL from DATABASE_URL', async () => {
    const schema = uniqueSchema('mh');
    const saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = multiHost([refusing], 'target_session_attrs=primary');
    try {
      const ledger = await createLedger({ schema, telemetry: false });
      try {
        const tool = ledger.tool({ name: 'one', kind: 'mutation', handler: async () => 'ok' });
        expect(await tool.call({}, { key: 'k' })).toBe('ok');
      } finally {
        await ledger.close();
      }
    } finally {
      process.env.DATABASE_URL = saved;
      await backend.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });

  it('gives a host that black-holes packets its own turn, so the next host is still reached', async () => {
    // A proxy that accepts the connection and never answers, as a lost machine behind a stale route does. With no
    // bound on the whole connect (connectTimeoutSeconds 0), only the URL's connect_timeout, per host, ends the wait
    // on the first host: without it the ledger would never start.
    const hole = await startProxy(Number(new URL(databaseUrl()).port || 5432));
    hole.mode = 'blackhole';
    const schema = uniqueSchema('mh');
    try {
      const ledger = await createLedger({
        connectionString: multiHost(
          [`127.0.0.1:${hole.port}`],
          'target_session_attrs=read-write&connect_timeout=1',
        ),
        connectTimeoutSeconds: 0,
        schema,
        telemetry: false,
      });
      try {
        const tool = ledger.tool({ name: 'one', kind: 'mutation', handler: async () => 'ok' });
        expect(await tool.call({}, { key: 'k' })).toBe('ok');
      } finally {
        await ledger.close();
      }
    } finally {
      await hole.close();
      await backend.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });

  it('says which hosts it tried when none will do, without the password', async () => {
    const other = `127.0.0.1:${await freePort()}`;
    const url = `postgres://app:hunter2-secret@${refusing},${other}/db?target_session_attrs=read-write`;
    const error = await createLedger({ connectionString: url, telemetry: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isToolLedgerError(error) && error.code).toBe('LEDGER_UNAVAILABLE');
    const message = (error as Error).message;
    expect(message).toContain(
      `no read-write Postgres among ${refusing} (ECONNREFUSED), ${other} (ECONNREFUSED)`,
    );
    expect(message).toContain('postgres://app:***@');
    expect(message).not.toContain('hunter2');
  });

  it("keeps the server's own error when every host gives it, so a wrong database name reads as it does for one host", async () => {
    const url = new URL(databaseUrl());
    const userinfo = url.username ? `${url.username}${url.password ? `:${url.password}` : ''}@` : '';
    const wrong = `${url.protocol}//${userinfo}${url.host},${url.host}/no_such_db_mh?target_session_attrs=read-write`;
    const error = await createLedger({ connectionString: wrong, telemetry: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isToolLedgerError(error) && error.code).toBe('LEDGER_UNAVAILABLE');
    // As for one host: the server's 3D000 with its message, not "no read-write Postgres among ...".
    expect((error as Error).message).toMatch(/database "no_such_db_mh" does not exist/);
    expect((error as Error).message).not.toMatch(/no read-write Postgres/);
  });

  it('reads a libpq keyword string, one host or a list (pg alone would take it for a database name)', async () => {
    const url = new URL(databaseUrl());
    const words = (host: string, port: string) =>
      [
        `host=${host}`,
        `port=${port}`,
        `dbname='${decodeURIComponent(url.pathname.slice(1))}'`,
        url.username ? `user=${decodeURIComponent(url.username)}` : '',
        url.password ? `password='${decodeURIComponent(url.password).replace(/['\\]/g, '\\$&')}'` : '',
      ].join(' ');
    const [refusingHost, refusingPort] = refusing.split(':') as [string, string];
    for (const connectionString of [
      words(url.hostname, url.port || '5432'),
      `${words(`${refusingHost},${url.hostname}`, `${refusingPort},${url.port || '5432'}`)} target_session_attrs=read-write`,
    ]) {
      const schema = uniqueSchema('kw');
      const ledger = await createLedger({ connectionString, schema, telemetry: false });
      try {
        const tool = ledger.tool({ name: 'one', kind: 'mutation', handler: async () => 'ok' });
        expect(await tool.invoke({}, { key: 'k' })).toMatchObject({ outcome: 'executed', value: 'ok' });
        expect(await tool.invoke({}, { key: 'k' })).toMatchObject({ outcome: 'replayed', value: 'ok' });
      } finally {
        await ledger.close();
        await backend.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      }
    }
  });

  it('spreads connections over the hosts with load_balance_hosts=random, and keeps their order without it', async () => {
    // Two ways to the same server (a loopback proxy and the server itself), as two PgBouncers in front of one
    // primary are: each connection says which it reached by the port it ended on.
    const direct = Number(new URL(databaseUrl()).port || 5432);
    const proxy = await startProxy(direct);
    const schema = uniqueSchema('mhlb');
    const ledgers: Awaited<ReturnType<typeof createLedger>>[] = [];
    try {
      const portsReached = async (params: string) => {
        const url = multiHost([`127.0.0.1:${proxy.port}`], params);
        const options = pgConnectOptions(pg.Client, url, 5000);
        const reached: number[] = [];
        for (let i = 0; i < 40; i++) {
          const Client = options.Client as typeof pg.Client;
          const client = new Client({ connectionString: options.connectionString });
          await client.connect();
          reached.push(client.port);
          await client.end();
        }
        return reached;
      };
      const ordered = await portsReached('target_session_attrs=read-write');
      expect(new Set(ordered)).toEqual(new Set([proxy.port]));
      // 40 connections all on one of two hosts by chance: 2 in 2^40.
      const random = await portsReached('target_session_attrs=read-write&load_balance_hosts=random');
      expect(new Set(random)).toEqual(new Set([proxy.port, direct]));

      const ledger = await createLedger({
        connectionString: multiHost([refusing, `127.0.0.1:${proxy.port}`], 'load_balance_hosts=random'),
        schema,
        telemetry: false,
      });
      ledgers.push(ledger);
      const tool = ledger.tool({ name: 'one', kind: 'mutation', handler: async () => 'ok' });
      expect(await tool.invoke({}, { key: 'k' })).toMatchObject({ outcome: 'executed', value: 'ok' });
      expect(await tool.invoke({}, { key: 'k' })).toMatchObject({ outcome: 'replayed', value: 'ok' });
    } finally {
      for (const ledger of ledgers) await ledger.close();
      await proxy.close();
      await backend.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });

  it('refuses a standby target before connecting, saying a ledger writes', async () => {
    await expect(
      createLedger({ connectionString: multiHost([refusing], 'target_session_attrs=standby') }),
    ).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringMatching(/a ledger writes/) });
  });
});

describe('the CLI with a multi-host URL', () => {
  beforeAll(() => ensureBuiltCli());
  const schema = uniqueSchema('mhcli');
  afterAll(async () => {
    await backend.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });

  const cli = (args: string[], env: Record<string, string>) =>
    spawnSync(process.execPath, [CLI_BIN, ...args], {
      env: { ...process.env, ...env },
      encoding: 'utf8',
      timeout: 30_000,
    });

  it('migrates and reads through DATABASE_URL and through --database-url', () => {
    const url = multiHost([refusing], 'target_session_attrs=read-write');
    const migrated = cli(['migrate', '--schema', schema], { DATABASE_URL: url });
    expect(migrated.stderr).toBe('');
    expect(migrated.status).toBe(0);
    // On the command line a password would be refused (rightly): it goes in PGPASSWORD.
    const { password } = new URL(databaseUrl());
    const withoutPassword = multiHost([refusing], 'target_session_attrs=read-write', false);
    const stats = cli(['stats', '--schema', schema, '--database-url', withoutPassword], {
      ...(password ? { PGPASSWORD: decodeURIComponent(password) } : {}),
    });
    expect(stats.stderr).toBe('');
    expect(stats.status).toBe(0);
  });

  it('refuses a standby target as a usage error, and a password in a host list on the command line', () => {
    const standby = cli(['stats', '--schema', schema], {
      DATABASE_URL: multiHost([refusing], 'target_session_attrs=read-only'),
    });
    expect(standby.status).toBe(2);
    expect(standby.stderr).toMatch(/DATABASE_URL: target_session_attrs=read-only .*a ledger writes/);
    const password = cli(['stats', '--database-url', `postgres://app:s3cret-pw@${refusing},db:5432/app`], {});
    expect(password.status).toBe(2);
    expect(password.stderr).toMatch(/carries a password/);
    expect(password.stderr).not.toContain('s3cret-pw');
  });

  it('reports hosts that all refuse without the password', () => {
    const r = cli(['stats'], { DATABASE_URL: `postgres://app:hunter2-secret@${refusing},${refusing}/db` });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('Could not connect to postgres://app:***@');
    expect(r.stderr).toContain('no reachable Postgres among');
    expect(r.stderr).not.toContain('hunter2');
  });
});
