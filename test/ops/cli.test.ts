import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deriveKey } from '../../src/contract/derive-key.js';
import { createLedger, type Ledger, ToolFailure } from '../../src/index.js';
import { MIGRATIONS } from '../../src/ledger/migrations.js';
import { hashKey } from '../../src/telemetry/key-hash.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';
import { CLI_BIN, ensureBuiltCli } from './support/cli-build.js';
import { ROOT } from './support/configs.js';
import { freePort } from './support/processes.js';

/** The real built binary, `node dist/cli/main.js`, against real Postgres with rows written by the library. */

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function cli(
  args: string[],
  options: { env?: Record<string, string | undefined>; input?: string } = {},
): Result {
  const env: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: databaseUrl(),
    ...options.env,
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const r = spawnSync(process.execPath, [CLI_BIN, ...args], {
    env: env as NodeJS.ProcessEnv,
    input: options.input ?? '',
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The deployment's key-hash secret stored in a schema. */
async function storedSecret(inSchema: string): Promise<string> {
  const { rows } = await pool.query(
    `SELECT value FROM "${inSchema}".tool_ledger_settings WHERE name = 'key_hash_secret'`,
  );
  expect(rows).toHaveLength(1);
  return rows[0].value as string;
}

/** Runs `fn` while the schema holds no key-hash secret, as before its first start with telemetry. */
async function withoutStoredSecret<T>(inSchema: string, fn: () => T): Promise<T> {
  const table = `"${inSchema}".tool_ledger_settings`;
  await pool.query(`UPDATE ${table} SET name = 'parked' WHERE name = 'key_hash_secret'`);
  try {
    return fn();
  } finally {
    await pool.query(`UPDATE ${table} SET name = 'key_hash_secret' WHERE name = 'parked'`);
  }
}

function json<T = Record<string, unknown>>(args: string[]): T {
  const r = cli([...args, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
}

const harness = new TelemetryHarness().registerGlobal();
const schema = uniqueSchema('ops_cli');
const freshSchema = uniqueSchema('ops_cli_fresh');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
let ledger: Ledger;

beforeAll(async () => {
  ensureBuiltCli();
  ledger = await createLedger({
    connectionString: databaseUrl(),
    schema,
    waitSeconds: 0,
    ...TEST_DISTRIBUTION,
  });
  const invoice = ledger.tool({
    name: 'create_invoice',
    kind: 'mutation',
    handler: async () => ({
      invoice: 'inv_2024_0042',
      email: 'maria.gonzalez@example.com',
      note: 'customer asked to call 415-555-0199',
    }),
  });
  const charge = ledger.tool({
    name: 'charge_card',
    kind: 'mutation',
    handler: async () => {
      throw new ToolFailure(
        'Refund failed for maria.gonzalez@example.com: card 5555-5555-5555-4444 declined',
        {
          final: true,
          reason: 'declined',
        },
      );
    },
  });
  await invoice.call(
    { amount: 10 },
    { tenant: 'acme', key: 'order-1042', user: 'maria.gonzalez@example.com' },
  );
  await expect(
    invoice.call({ amount: 11 }, { tenant: 'acme', key: 'order-1042', user: 'maria.gonzalez@example.com' }),
  ).rejects.toThrow();
  await expect(charge.call({ amount: 1 }, { tenant: 'globex', key: 'charge-7' })).rejects.toThrow();
  const t = `"${schema}".tool_runs`;
  // A run whose process died (lease lapsed) and one still running (lease held).
  await pool.query(
    `INSERT INTO ${t} (tenant_id, tool_name, idempotency_key, parameter_hash, status, attempt, lease_owner,
       lease_expires_at, trace_id, span_id, expires_at)
     VALUES ('acme', 'book_flight', 'trip-9', 'h1', 'in_progress', 2, 'worker-dead', now() - interval '5 minutes',
       '0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331', now() + interval '1 day'),
            ('acme', 'book_flight', 'trip-10', 'h2', 'in_progress', 1, 'worker-live', now() + interval '5 minutes',
       NULL, NULL, now() + interval '1 day')`,
  );
  // 25 expired rows for purge.
  await pool.query(
    `INSERT INTO ${t} (tenant_id, tool_name, idempotency_key, parameter_hash, status, completed_at, expires_at)
     SELECT 'old', 'create_invoice', 'old-' || g, 'h', 'succeeded', now() - interval '2 days', now() - interval '1 day'
     FROM generate_series(1, 25) g`,
  );
}, 120_000);

afterAll(async () => {
  await ledger?.close();
  for (const s of [schema, freshSchema]) await pool.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  await pool.end();
  await harness.shutdown();
});

describe('tool-ledger CLI', () => {
  it('prints help with examples, and exits 2 with no command', () => {
    const help = cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Examples');
    expect(help.stdout).toContain('tool-ledger inspect --tenant');
    expect(cli([]).code).toBe(2);
    expect(cli(['help']).code).toBe(0);
  });

  it('has a shebang and is the package bin', async () => {
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(CLI_BIN, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin['tool-ledger']).toBe('./dist/cli/main.js');
  });

  describe('migrate', () => {
    it('prints the migration SQL without a database', () => {
      const r = cli(['migrate', '--print-sql', '--schema', 'billing_ledger'], {
        env: { DATABASE_URL: undefined },
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('CREATE TABLE "billing_ledger".tool_runs');
      expect(r.stdout.trim().endsWith('COMMIT;')).toBe(true);
    });

    it('applies the migrations once, then finds the schema up to date', async () => {
      const first = json<{ applied: number[]; version: number }>(['migrate', '--schema', freshSchema]);
      expect(first.applied).toEqual(MIGRATIONS.map((m) => m.version));
      const second = cli(['migrate', '--schema', freshSchema]);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain('up to date');
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${freshSchema}".tool_runs`);
      expect(rows[0].n).toBe(0);
      // The deployment's key-hash secret is made with the schema, for application roles that may only read it.
      const { rows: secrets } = await pool.query(`SELECT name FROM "${freshSchema}".tool_ledger_settings`);
      expect(secrets).toEqual([{ name: 'key_hash_secret' }]);
    });

    it('refuses a schema name that is not a plain identifier', () => {
      const r = cli(['migrate', '--schema', 'x"; DROP TABLE y; --']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('not a plain Postgres identifier');
    });
  });

  describe('inspect', () => {
    it('shows the run with scrubbed result, trace id and Jaeger link', () => {
      const r = cli([
        'inspect',
        '--schema',
        schema,
        '--tenant',
        'acme',
        '--tool',
        'create_invoice',
        '--key',
        'order-1042',
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/status\s+succeeded/);
      expect(r.stdout).toMatch(/attempt\s+1/);
      expect(r.stdout).toMatch(/parameter hash\s+[0-9a-f]{64}/);
      expect(r.stdout).toMatch(/conflicts\s+1 \(last /);
      expect(r.stdout).toContain('inv_2024_0042');
      expect(r.stdout).not.toContain('maria.gonzalez@example.com');
      expect(r.stdout).not.toContain('415-555-0199');
      const trace = /trace id\s+([0-9a-f]{32})/.exec(r.stdout)?.[1];
      expect(trace).toBeDefined();
      expect(r.stdout).toContain(`http://localhost:16686/trace/${trace}`);
    });

    it('gives scripts JSON, with the Jaeger base from --jaeger-url', () => {
      const run = json<{
        status: string;
        error: { code: string; message: string; final: boolean };
        jaegerUrl: string;
        traceId: string;
      }>([
        'inspect',
        '--schema',
        schema,
        '--tenant',
        'globex',
        '--tool',
        'charge_card',
        '--key',
        'charge-7',
        '--jaeger-url',
        'https://jaeger.example.net/',
      ]);
      expect(run.status).toBe('failed');
      expect(run.error.code).toBe('TOOL_FAILED');
      expect(run.error.final).toBe(true);
      expect(run.error.message).not.toContain('maria.gonzalez@example.com');
      expect(run.error.message).not.toContain('5555-5555-5555-4444');
      expect(run.error.message).toContain('declined');
      expect(run.jaegerUrl).toBe(`https://jaeger.example.net/trace/${run.traceId}`);
    });

    it('exits 3 when there is no such run, and 2 when neither --key nor --job is given', () => {
      const missing = cli([
        'inspect',
        '--schema',
        schema,
        '--tenant',
        'acme',
        '--tool',
        'create_invoice',
        '--key',
        'nope',
      ]);
      expect(missing.code).toBe(3);
      expect(missing.stderr).toContain('No run for tenant "acme"');
      const usage = cli(['inspect', '--schema', schema, '--tenant', 'acme']);
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain('inspect needs --key K or --job ID');
    });
  });

  describe('list', () => {
    it('lists stuck runs: in_progress with a lapsed lease only', () => {
      const r = cli(['list', '--schema', schema, '--status', 'in_progress', '--stale']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('trip-9');
      expect(r.stdout).not.toContain('trip-10');
      expect(r.stdout).toContain('worker-dead');
      const data = json<{
        runs: { key: string; leaseLapsed: boolean; lapsedSeconds: number; jaegerUrl: string }[];
      }>(['list', '--schema', schema, '--stale']);
      expect(data.runs.map((x) => x.key)).toEqual(['trip-9']);
      expect(data.runs[0]?.lapsedSeconds).toBeGreaterThan(290);
      expect(data.runs[0]?.jaegerUrl).toBe('http://localhost:16686/trace/0af7651916cd43dd8448eb211c80319c');
    });

    it('lists by status and filters by tenant and tool', () => {
      const all = json<{ runs: { key: string }[] }>(['list', '--schema', schema]);
      expect(all.runs.map((x) => x.key).sort()).toEqual(['trip-10', 'trip-9']);
      const failed = json<{ runs: { key: string }[] }>([
        'list',
        '--schema',
        schema,
        '--status',
        'failed',
        '--tenant',
        'globex',
      ]);
      expect(failed.runs.map((x) => x.key)).toEqual(['charge-7']);
      const none = cli(['list', '--schema', schema, '--status', 'failed', '--tool', 'create_invoice']);
      expect(none.stdout).toContain('No failed runs');
    });

    it('rejects a bad status, --stale with another status, and a bad limit', () => {
      expect(cli(['list', '--schema', schema, '--status', 'done']).code).toBe(2);
      expect(cli(['list', '--schema', schema, '--status', 'failed', '--stale']).code).toBe(2);
      expect(cli(['list', '--schema', schema, '--limit', '0']).code).toBe(2);
    });
  });

  describe('stats', () => {
    it('counts by tool and status, with stale, expired and conflicts', () => {
      const s = json<{
        totals: Record<string, number>;
        byTool: { tool: string; status: string; count: number }[];
      }>(['stats', '--schema', schema]);
      expect(s.totals).toMatchObject({
        total: 29,
        in_progress: 2,
        succeeded: 26,
        failed: 1,
        stale: 1,
        expired: 25,
        conflicts: 1,
      });
      expect(s.byTool).toContainEqual(
        expect.objectContaining({ tool: 'book_flight', status: 'in_progress', count: 2 }),
      );
      const human = cli(['stats', '--schema', schema, '--tenant', 'acme']);
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/create_invoice\s+succeeded\s+1\s+0\s+0\s+1/);
    });
  });

  describe('purge', () => {
    it('needs --expired, counts on --dry-run, then deletes in batches with progress on stderr', async () => {
      expect(cli(['purge', '--schema', schema]).code).toBe(2);
      const dry = json<{ expired: number; deleted: number }>([
        'purge',
        '--expired',
        '--dry-run',
        '--schema',
        schema,
      ]);
      expect(dry).toMatchObject({ expired: 25, deleted: 0 });
      const r = cli(['purge', '--expired', '--batch-size', '10', '--schema', schema]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr.trim().split('\n')).toEqual([
        'purged 10 of ~25 expired rows (40%)',
        'purged 20 of ~25 expired rows (80%)',
        'purged 25 of ~25 expired rows (100%)',
      ]);
      expect(r.stdout).toContain('Purged 25 expired rows');
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM "${schema}".tool_runs`);
      expect(rows[0].n).toBe(4);
    });
  });

  describe('hash-key', () => {
    const secret = 'support-secret-of-the-deployment';

    it('prints the same HMAC telemetry emits, from stdin or the environment', () => {
      const r = cli(['hash-key'], {
        env: { TOOL_LEDGER_KEY_HASH_SECRET: secret },
        input: 'maria.gonzalez@example.com\n',
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(hashKey('maria.gonzalez@example.com', secret));
      expect(r.stderr).toContain('tool_ledger.idempotency.key_hash=');
      const fromEnv = cli(['hash-key', '--json'], {
        env: { TOOL_LEDGER_KEY_HASH_SECRET: secret, TOOL_LEDGER_RAW_KEY: 'maria.gonzalez@example.com' },
      });
      expect(JSON.parse(fromEnv.stdout)).toMatchObject({
        attribute: 'tool_ledger.idempotency.key_hash',
        hash: hashKey('maria.gonzalez@example.com', secret),
      });
      const dash = cli(['hash-key', '-'], { env: { TOOL_LEDGER_KEY_HASH_SECRET: secret }, input: 'k' });
      expect(dash.stdout.trim()).toBe(hashKey('k', secret));
    });

    it('refuses a raw key in argv (ps shows it) without echoing it', () => {
      const r = cli(['hash-key', 'maria.gonzalez@example.com'], {
        env: { TOOL_LEDGER_KEY_HASH_SECRET: secret },
      });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('standard input');
      expect(r.stderr).toContain('TOOL_LEDGER_RAW_KEY');
      expect(r.stdout + r.stderr).not.toContain('maria.gonzalez');
    });

    it('fails clearly with neither the variable nor a stored secret', () => {
      const env = { TOOL_LEDGER_KEY_HASH_SECRET: undefined };
      const none = cli(['hash-key', '--schema', uniqueSchema('no_such')], { env, input: 'k' });
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('TOOL_LEDGER_KEY_HASH_SECRET is not set and schema');
      const noDb = cli(['hash-key'], { env: { ...env, DATABASE_URL: undefined }, input: 'k' });
      expect(noDb.code).toBe(1);
      expect(noDb.stderr).toContain('no database to read the deployment');
    });
  });

  describe('errors', () => {
    it('says how to give a database', () => {
      const r = cli(['stats'], { env: { DATABASE_URL: undefined } });
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('set DATABASE_URL or pass --database-url');
    });

    it('reports an unreachable database without its password', async () => {
      const port = await freePort();
      // The password comes from the environment: on the command line it is refused (see below).
      const r = cli(['stats'], { env: { DATABASE_URL: `postgres://app:hunter2@127.0.0.1:${port}/db` } });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('Could not connect to postgres://app:***@127.0.0.1');
      expect(r.stderr).not.toContain('hunter2');
      const q = cli(['stats'], {
        env: { DATABASE_URL: `postgres://app@127.0.0.1:${port}/db?password=hunter2` },
      });
      expect(q.code).toBe(1);
      expect(q.stderr).not.toContain('hunter2');
    });

    it('says to run migrate when the schema has no ledger', () => {
      const r = cli(['stats', '--schema', 'no_such_ledger_schema']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('tool-ledger migrate --schema no_such_ledger_schema');
    });

    it('rejects unknown commands and options', () => {
      expect(cli(['frobnicate']).code).toBe(2);
      const r = cli(['stats', '--frobnicate']);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain("Unknown option '--frobnicate'");
    });
  });
});

describe('issue 14: the CLI is safe to paste into and read from', () => {
  it('prints its version', () => {
    const r = cli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^tool-ledger \d+\.\d+\.\d+/);
  });

  it('refuses a password inside --database-url (ps shows argv)', () => {
    for (const url of [
      'postgres://app:s3cret@127.0.0.1:5432/db',
      'postgres://app@127.0.0.1/db?password=s3cret',
    ]) {
      const r = cli(['stats', '--database-url', url]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/PGPASSWORD/);
      expect(r.stdout + r.stderr).not.toContain('s3cret');
    }
  });

  it('escapes control characters and bidi overrides stored in ids', async () => {
    const key = 'evil\u001b[2J\u202egnp.exe';
    const tool = ledger.tool({ name: 'hostile_ids', kind: 'mutation', handler: async () => 1 });
    await expect(tool.call({}, { tenant: 'acme', key })).rejects.toMatchObject({ code: 'KEY_INVALID' });
    const t = `"${schema}".tool_runs`;
    await pool.query(
      `INSERT INTO ${t} (tenant_id, tool_name, idempotency_key, parameter_hash, status, attempt, result_json,
         completed_at, expires_at)
       VALUES ('acme', 'hostile_ids', $1, 'h', 'succeeded', 1, '{"x":"\u202e"}', now(), now() + interval '1 day')`,
      [key],
    );
    const r = cli(['inspect', '--schema', schema, '--tenant', 'acme', '--tool', 'hostile_ids', '--key', key]);
    expect(r.code, r.stderr).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for the raw control characters.
    expect(r.stdout).not.toMatch(/[\u001b\u202e]/);
    expect(r.stdout).toContain('\\u{1b}[2J\\u{202e}gnp.exe');
  });
});

describe('issue 14: support finds, derives and forgets keys', () => {
  const secret = 'support-secret-of-the-deployment';
  const t = () => `"${schema}".tool_runs`;
  const personal = 'maria.gonzalez@example.com';

  beforeAll(async () => {
    // One key in two tenants and two tools, a personal key, and a background job.
    await pool.query(
      `INSERT INTO ${t()} (tenant_id, tool_name, idempotency_key, parameter_hash, status, job_id, completed_at, expires_at)
       VALUES ('acme', 'send_mail', 'shared-7', 'h', 'succeeded', NULL, now(), now() + interval '1 day'),
              ('globex', 'send_mail', 'shared-7', 'h', 'succeeded', NULL, now(), now() + interval '1 day'),
              ('globex', 'refund', 'shared-7', 'h', 'failed', NULL, now(), now() + interval '1 day'),
              ('acme', 'export_data', $1, 'h', 'in_progress', 'job-4711', NULL, now() + interval '1 day'),
              ('initech', 'export_data', $1, 'h', 'succeeded', NULL, now(), now() + interval '1 day')`,
      [personal],
    );
    await pool.query(
      `UPDATE ${t()} SET status = 'in_progress', lease_expires_at = now() + interval '1 hour' WHERE job_id = 'job-4711'`,
    );
  });

  it('inspect --key lists every match across tenants and tools, narrowed by --tenant and --tool', () => {
    const all = json<{ runs: { tenant: string; tool: string; key: string }[] }>([
      'inspect',
      '--schema',
      schema,
      '--key',
      'shared-7',
    ]);
    expect(all.runs.map((r) => `${r.tenant}/${r.tool}`)).toEqual([
      'acme/send_mail',
      'globex/refund',
      'globex/send_mail',
    ]);
    const human = cli(['inspect', '--schema', schema, '--key', 'shared-7']);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('3 runs match key "shared-7"');
    expect(human.stdout.match(/^Run \d+ in /gm)).toHaveLength(3);
    const globex = json<{ runs: { tool: string }[] }>([
      'inspect',
      '--schema',
      schema,
      '--key',
      'shared-7',
      '--tenant',
      'globex',
    ]);
    expect(globex.runs.map((r) => r.tool)).toEqual(['refund', 'send_mail']);
    const one = json<{ runs: { tenant: string }[] }>([
      'inspect',
      '--schema',
      schema,
      '--key',
      'shared-7',
      '--tool',
      'refund',
    ]);
    expect(one.runs.map((r) => r.tenant)).toEqual(['globex']);
    expect(cli(['inspect', '--schema', schema, '--key', 'no-such-key']).code).toBe(3);
    expect(cli(['inspect', '--schema', schema]).code).toBe(2);
    expect(cli(['inspect', '--schema', schema, '--key', 'a', '--job', 'b']).code).toBe(2);
  });

  it('inspect --job finds the run of a background job, showing its key the way telemetry does', () => {
    const r = cli(['inspect', '--schema', schema, '--job', 'job-4711'], {
      env: { TOOL_LEDGER_KEY_HASH_SECRET: secret },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/job id\s+job-4711/);
    expect(r.stdout).toMatch(/tenant\s+acme/);
    expect(r.stdout).not.toContain(personal);
    expect(r.stdout).toContain(`hmac:${hashKey(personal, secret)}`);
    const data = json<{ runs: { key: string | null; keyHash: string | null }[] }>([
      'inspect',
      '--schema',
      schema,
      '--job',
      'job-4711',
    ]);
    expect(data.runs).toHaveLength(1);
    expect(data.runs[0]?.key).toBeNull();
    expect(cli(['inspect', '--schema', schema, '--job', 'job-0']).code).toBe(3);
  });

  it('list shows keys the way telemetry does: safe keys raw, personal ones as their HMAC', async () => {
    const r = cli(['list', '--schema', schema, '--tool', 'export_data'], {
      env: { TOOL_LEDGER_KEY_HASH_SECRET: secret },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain(personal);
    expect(r.stdout).toContain(`hmac:${hashKey(personal, secret)}`);
    const stored = cli(['list', '--schema', schema, '--tool', 'export_data'], {
      env: { TOOL_LEDGER_KEY_HASH_SECRET: undefined },
    });
    expect(stored.stdout).not.toContain(personal);
    expect(stored.stdout).toContain(`hmac:${hashKey(personal, await storedSecret(schema))}`);
    const noSecret = await withoutStoredSecret(schema, () =>
      cli(['list', '--schema', schema, '--tool', 'export_data'], {
        env: { TOOL_LEDGER_KEY_HASH_SECRET: undefined },
      }),
    );
    expect(noSecret.stdout).not.toContain(personal);
    expect(noSecret.stdout).toContain('(hidden: set TOOL_LEDGER_KEY_HASH_SECRET)');
    const safe = json<{ runs: { key: string | null }[] }>(['list', '--schema', schema, '--stale']);
    expect(safe.runs.map((x) => x.key)).toEqual(['trip-9']);
  });

  it('derive-key computes what deriveKey() computes, from the same inputs', () => {
    const input = { runId: 'conv-81', toolCallId: 'call_1', tool: 'create_invoice' };
    const r = cli([
      'derive-key',
      '--run-id',
      'conv-81',
      '--tool-call-id',
      'call_1',
      '--tool',
      'create_invoice',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(deriveKey(input));
    const withInstruction = cli(
      ['derive-key', '--run-id', 'wf-2', '--step-index', '3', '--instruction', '-', '--json'],
      {
        input: '{"b":2,"a":[1,"x"]}',
      },
    );
    expect(JSON.parse(withInstruction.stdout)).toEqual({
      key: deriveKey({ runId: 'wf-2', step: 3, instruction: { a: [1, 'x'], b: 2 } }),
    });
    const named = cli(['derive-key', '--run-id', 'wf-2', '--step', '3']);
    expect(named.stdout.trim()).toBe(deriveKey({ runId: 'wf-2', step: '3' }));
    expect(named.stdout.trim()).not.toBe(deriveKey({ runId: 'wf-2', step: 3 }));
    expect(cli(['derive-key']).code).toBe(2);
    expect(cli(['derive-key', '--run-id', 'x', '--instruction', '{nope']).code).toBe(2);
  });

  it('forget is a dry run by default, deletes with --yes, and records who, when and why without the raw key', async () => {
    const count = async () =>
      (await pool.query(`SELECT count(*)::int AS n FROM ${t()} WHERE idempotency_key = $1`, [personal]))
        .rows[0].n as number;
    const env = { TOOL_LEDGER_KEY_HASH_SECRET: secret };
    const dry = cli(['forget', '--schema', schema, '--key', personal], { env });
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('2 runs would be forgotten (dry run');
    expect(dry.stdout).not.toContain(personal);
    expect(await count()).toBe(2);

    const noSecret = await withoutStoredSecret(schema, () =>
      cli(['forget', '--schema', schema, '--key', personal, '--yes', '--by', 'ana'], {
        env: { TOOL_LEDGER_KEY_HASH_SECRET: undefined },
      }),
    );
    expect(noSecret.code).toBe(1);
    expect(noSecret.stderr).toContain('TOOL_LEDGER_KEY_HASH_SECRET');
    expect(await count()).toBe(2);

    const gone = cli(
      [
        'forget',
        '--schema',
        schema,
        '--key',
        personal,
        '--tenant',
        'initech',
        '--yes',
        '--by',
        'ana@support',
        '--reason',
        'GDPR request 88',
        '--json',
      ],
      { env },
    );
    expect(gone.code, gone.stderr).toBe(0);
    expect(JSON.parse(gone.stdout)).toMatchObject({ dryRun: false, runs: [{ tenant: 'initech' }] });
    expect(gone.stdout).not.toContain(personal);
    expect(await count()).toBe(1);

    // --yes without --by is refused: the audit names a person, never the machine account the CLI ran as.
    const noBy = cli(['forget', '--schema', schema, '--key', personal, '--yes'], { env });
    expect(noBy.code).toBe(2);
    expect(noBy.stderr).toContain('forget --yes needs --by WHO');
    expect(await count()).toBe(1);
    const rest = cli(['forget', '--schema', schema, '--key', personal, '--yes', '--by', 'bo'], { env });
    expect(rest.code, rest.stderr).toBe(0);
    expect(rest.stdout).toContain('Forgot 1 run');
    expect(await count()).toBe(0);

    const { rows } = await pool.query(
      `SELECT tenant_id, tool_name, key_attribute, key_value, forgotten_by, reason, forgotten_at
       FROM "${schema}".tool_runs_forgotten ORDER BY id`,
    );
    expect(JSON.stringify(rows)).not.toContain(personal);
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatchObject({
      tenant_id: 'initech',
      tool_name: 'export_data',
      key_attribute: 'tool_ledger.idempotency.key_hash',
      key_value: hashKey(personal, secret),
      forgotten_by: 'ana@support',
      reason: 'GDPR request 88',
    });
    expect(rows[0].forgotten_at).toBeInstanceOf(Date);
    expect(rows[1]).toMatchObject({ tenant_id: 'acme', forgotten_by: 'bo', reason: null });

    const safe = cli(
      ['forget', '--schema', schema, '--key', 'shared-7', '--tool', 'refund', '--yes', '--by', 'ana'],
      {
        env: { TOOL_LEDGER_KEY_HASH_SECRET: undefined },
      },
    );
    expect(safe.code, safe.stderr).toBe(0);
    const { rows: safeRows } = await pool.query(
      `SELECT key_attribute, key_value FROM "${schema}".tool_runs_forgotten WHERE tool_name = 'refund'`,
    );
    expect(safeRows).toEqual([{ key_attribute: 'tool_ledger.idempotency.key', key_value: 'shared-7' }]);
    expect(cli(['forget', '--schema', schema]).code).toBe(2);

    // A key telemetry never emits (control characters) is still forgotten, and audited by its HMAC.
    const hostile = 'evil\u001b[2J\u202egnp.exe';
    const h = cli(
      ['forget', '--schema', schema, '--key', hostile, '--tool', 'hostile_ids', '--yes', '--by', 'ana'],
      {
        env,
      },
    );
    expect(h.code, h.stderr).toBe(0);
    expect(h.stdout).toContain(`hmac:${hashKey(hostile, secret)}`);
    const { rows: hostileRows } = await pool.query(
      `SELECT key_value FROM "${schema}".tool_runs_forgotten WHERE tool_name = 'hostile_ids'`,
    );
    expect(hostileRows).toEqual([{ key_value: hashKey(hostile, secret) }]);
  });
});

describe('issue 11: support hashes a raw key under the secret the service uses, with none configured', () => {
  const unset = { TOOL_LEDGER_KEY_HASH_SECRET: undefined };
  const unsafe = 'refund-for-Priya-Raman';
  const rotated = uniqueSchema('ops_cli_rotate');

  afterAll(async () => {
    await pool.query(`DROP SCHEMA IF EXISTS "${rotated}" CASCADE`);
  });

  /** One call with the unsafe key on a ledger of its own exporters; the key_hash and params_hash it emitted. */
  async function emitted(inSchema: string, run = 0): Promise<{ keyHash: unknown; paramsHash: unknown }> {
    const own = new TelemetryHarness();
    const opened = await createLedger({
      connectionString: databaseUrl(),
      schema: inSchema,
      telemetry: own.providers(),
      ...TEST_DISTRIBUTION,
    });
    try {
      const tool = opened.tool({ name: 'refund', kind: 'mutation', handler: () => 'ok' });
      await tool.call({ run }, { tenant: 'acme', key: `${unsafe}-${run}` });
      const span = own.finishedSpans()[0];
      return {
        keyHash: span?.attributes['tool_ledger.idempotency.key_hash'],
        paramsHash: span?.attributes['tool_ledger.idempotency.params_hash'],
      };
    } finally {
      await opened.close();
      await own.shutdown();
    }
  }

  const hashKeyCli = (inSchema: string, key: string) =>
    cli(['hash-key', '--schema', inSchema], { env: unset, input: key });

  it('hash-key prints the key_hash the service emitted, reading the secret from the ledger schema', async () => {
    const span = await emitted(schema);
    const r = hashKeyCli(schema, `${unsafe}-0`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe(span.keyHash);
    expect(r.stderr).toContain(`"${schema}".tool_ledger_settings`);
    // The variable still wins, as it does in the service.
    const configured = cli(['hash-key', '--schema', schema], {
      env: { TOOL_LEDGER_KEY_HASH_SECRET: 'another-secret-of-16+-bytes' },
      input: `${unsafe}-0`,
    });
    expect(configured.stdout.trim()).toBe(hashKey(`${unsafe}-0`, 'another-secret-of-16+-bytes'));
  });

  it('inspect --job and forget use the stored secret too', async () => {
    const secret = await storedSecret(schema);
    await pool.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, job_id, completed_at, expires_at)
       VALUES ('acme', 'erase_me', $1, 'h', 'succeeded', 'job-11', now(), now() + interval '1 day')`,
      [unsafe],
    );
    const job = cli(['inspect', '--schema', schema, '--job', 'job-11'], { env: unset });
    expect(job.code, job.stderr).toBe(0);
    expect(job.stdout).not.toContain(unsafe);
    expect(job.stdout).toContain(`hmac:${hashKey(unsafe, secret)}`);
    const gone = cli(
      ['forget', '--schema', schema, '--key', unsafe, '--tool', 'erase_me', '--yes', '--by', 'ana'],
      {
        env: unset,
      },
    );
    expect(gone.code, gone.stderr).toBe(0);
    const { rows } = await pool.query(
      `SELECT key_value FROM "${schema}".tool_runs_forgotten WHERE tool_name = 'erase_me'`,
    );
    expect(rows).toEqual([{ key_value: hashKey(unsafe, secret) }]);
  });

  it('rotate-key-secret is a dry run without --yes; with it, new processes and hash-key use the new secret and running ones keep the old until restarted', async () => {
    // Prepare: a running process, started before the rotation.
    const before = await emitted(rotated, 1);
    const old = await storedSecret(rotated);
    const running = new TelemetryHarness();
    const longLived = await createLedger({
      connectionString: databaseUrl(),
      schema: rotated,
      telemetry: running.providers(),
      ...TEST_DISTRIBUTION,
    });
    try {
      // Act: a dry run, then the rotation.
      const dry = cli(['rotate-key-secret', '--schema', rotated], { env: unset });
      expect(dry.code, dry.stderr).toBe(0);
      expect(dry.stdout).toContain('dry run');
      expect(await storedSecret(rotated)).toBe(old);
      const r = cli(['rotate-key-secret', '--schema', rotated, '--yes', '--json'], { env: unset });
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ schema: rotated, dryRun: false });
      expect(r.stdout + r.stderr).not.toContain(old);

      // Assess
      const fresh = await storedSecret(rotated);
      expect(fresh).toMatch(/^[0-9a-f]{64}$/);
      expect(fresh).not.toBe(old);
      expect(r.stdout).not.toContain(fresh);
      expect(before.keyHash).toBe(hashKey(`${unsafe}-1`, old));
      const after = await emitted(rotated, 2);
      expect(after.keyHash).toBe(hashKey(`${unsafe}-2`, fresh));
      expect(hashKeyCli(rotated, `${unsafe}-2`).stdout.trim()).toBe(after.keyHash);
      await longLived
        .tool({ name: 'refund', kind: 'mutation', handler: () => 'ok' })
        .call({}, { key: unsafe });
      expect(running.finishedSpans()[0]?.attributes['tool_ledger.idempotency.key_hash']).toBe(
        hashKey(unsafe, old),
      );
    } finally {
      await longLived.close();
      await running.shutdown();
    }
  });

  it('rotate-key-secret says to migrate first on a schema without the settings table', () => {
    const r = cli(['rotate-key-secret', '--schema', uniqueSchema('no_such'), '--yes'], { env: unset });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('tool-ledger migrate');
  });
});
