import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import setup, { describeUrl } from '../setup/postgres.js';

/**
 * The suite's own Postgres setup (test/setup/postgres.ts), as a fresh clone without DATABASE_URL meets it: the
 * embedded server, the line that says which Postgres is used, and a failure that says why.
 */

const saved = { url: process.env.DATABASE_URL, flags: process.env.TOOL_LEDGER_EMBEDDED_PG_FLAGS };

afterEach(() => {
  process.env.DATABASE_URL = saved.url;
  if (saved.flags === undefined) delete process.env.TOOL_LEDGER_EMBEDDED_PG_FLAGS;
  else process.env.TOOL_LEDGER_EMBEDDED_PG_FLAGS = saved.flags;
  vi.restoreAllMocks();
});

/** Runs `setup()` with stderr captured; returns what it wrote. */
async function withStderr<T>(use: () => Promise<T>): Promise<{ value: T; lines: string[] }> {
  const lines: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  const value = await use();
  vi.restoreAllMocks();
  return { value, lines };
}

describe('the Postgres test setup', () => {
  it('names a DATABASE_URL server by user, host, port and database, never its password', async () => {
    process.env.DATABASE_URL = 'postgres://app:s3cret-pw@db.internal:6543/ledger?sslmode=require';
    const { value, lines } = await withStderr(() => setup());
    expect(value).toBeUndefined();
    expect(lines).toEqual(['Postgres for the tests: DATABASE_URL, app@db.internal:6543/ledger\n']);
    expect(describeUrl('postgresql:///test')).toBe('localhost:5432/test');
  });

  it('without DATABASE_URL, starts an embedded server, says which in one line, and stops it', async () => {
    delete process.env.DATABASE_URL;
    const { value: teardown, lines } = await withStderr(() => setup());
    try {
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^Postgres for the tests: embedded Postgres \d+\.\d+ on port \d+\n$/);
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      // Once the query has answered, a socket error while the connection closes says nothing about the setup;
      // unheard, it would be an uncaught exception that fails the run.
      client.on('error', () => {});
      await client.connect();
      const { rows } = await client.query<{ port: string }>(`SELECT current_setting('port') AS port`);
      await client.end();
      expect(lines[0]).toContain(`on port ${rows[0]!.port}`);
    } finally {
      await teardown?.();
    }
  });

  it("fails with the server's own log, after a second attempt on another port", async () => {
    delete process.env.DATABASE_URL;
    process.env.TOOL_LEDGER_EMBEDDED_PG_FLAGS = '-c shared_buffers=not-a-size';
    const failure = await setup().then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure).toBeInstanceOf(Error);
    const message = failure!.message;
    expect(message).toMatch(/^embedded Postgres did not start, twice \(set DATABASE_URL/);
    const logged =
      message.match(/FATAL: {2}invalid value for parameter "shared_buffers": "not-a-size"/g) ?? [];
    expect(logged).toHaveLength(2);
    const ports = [...message.matchAll(/embedded Postgres on port (\d+)/g)].map((m) => m[1]);
    expect(ports).toHaveLength(2);
    expect(ports[0]).not.toBe(ports[1]);
  });
});
