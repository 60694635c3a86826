import { spawnSync } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger, ToolFailure } from '../../src/index.js';
import { hashKey } from '../../src/telemetry/key-hash.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';
import { CLI_BIN, ensureBuiltCli } from './support/cli-build.js';

/**
 * Issue 26: what an operator reads in a first incident. The real built binary against real Postgres with rows
 * written by the library: stored JSON as readable lines, forgotten keys explained from the audit table, plurals,
 * user ids and failure reasons scrubbed as telemetry scrubs them, and every echoed value escaped.
 */

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

const secret = 'incident-support-secret-0123456789';

function cli(args: string[], env: Record<string, string | undefined> = {}): Result {
  const merged: Record<string, string | undefined> = {
    ...process.env,
    DATABASE_URL: databaseUrl(),
    TOOL_LEDGER_KEY_HASH_SECRET: secret,
    ...env,
  };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  const r = spawnSync(process.execPath, [CLI_BIN, ...args], {
    env: merged as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the tests look for raw control characters.
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

const schema = uniqueSchema('ops_cli_incident');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
let ledger: Ledger;
const stored = {
  note: 'line one\nline two',
  nested: { items: [1, 2], flag: true },
  hostile: 'a\u202eb\u0085c',
};

beforeAll(async () => {
  ensureBuiltCli();
  ledger = await createLedger({
    connectionString: databaseUrl(),
    schema,
    waitSeconds: 0,
    telemetry: { keyHashSecret: secret },
    ...TEST_DISTRIBUTION,
  });
  const note = ledger.tool({ name: 'write_note', kind: 'mutation', handler: async () => stored });
  await note.call({}, { tenant: 'acme', key: 'note-1', user: 'u_42' });
  await note.call({}, { tenant: 'acme', key: 'note-2', user: 'Priya Raman' });
  const refund = ledger.tool({
    name: 'refund',
    kind: 'mutation',
    handler: async () => {
      throw new ToolFailure('Refund declined', {
        final: true,
        reason: 'bank rejected maria.gonzalez@example.com, call +1 415 555 0199',
      });
    },
  });
  await expect(refund.call({}, { tenant: 'acme', key: 'refund-1' })).rejects.toThrow();
  await note.call({}, { tenant: 'acme', key: 'gone-1' });
  await note.call({}, { tenant: 'acme', key: 'maria.gonzalez@example.com' });
}, 120_000);

afterAll(async () => {
  await ledger?.close();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

describe('issue 26: the support CLI in an incident', () => {
  it('inspect prints stored JSON as indented lines, escaping only what a terminal would act on', () => {
    const r = cli([
      'inspect',
      '--schema',
      schema,
      '--tenant',
      'acme',
      '--tool',
      'write_note',
      '--key',
      'note-1',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toContain('\\u{a}');
    expect(r.stdout).not.toMatch(RAW_UNSAFE);
    const lines = r.stdout.split('\n');
    const at = lines.indexOf('result (scrubbed):');
    expect(at).toBeGreaterThan(0);
    expect(lines.slice(at + 1, at + 12)).toEqual([
      '  {',
      '    "note": "line one\\nline two",',
      '    "nested": {',
      '      "items": [',
      '        1,',
      '        2',
      '      ],',
      '      "flag": true',
      '    },',
      '    "hostile": "a\\u{202e}b\\u{85}c"',
      '  }',
    ]);

    // --json: the same value, with the characters a terminal acts on written as JSON escapes.
    const j = cli([
      'inspect',
      '--schema',
      schema,
      '--tenant',
      'acme',
      '--tool',
      'write_note',
      '--key',
      'note-1',
      '--json',
    ]);
    expect(j.code, j.stderr).toBe(0);
    expect(j.stdout).not.toMatch(RAW_UNSAFE);
    expect(j.stdout).toContain('"a\\u202eb\\u0085c"');
    expect(JSON.parse(j.stdout).result).toEqual(stored);
  });

  it('shows stored user ids as telemetry shows ids: safe ones raw, personal ones only as their HMAC', () => {
    const safe = cli([
      'inspect',
      '--schema',
      schema,
      '--tenant',
      'acme',
      '--tool',
      'write_note',
      '--key',
      'note-1',
    ]);
    expect(safe.stdout).toMatch(/\n {2}user +u_42\n/);
    const args = [
      'inspect',
      '--schema',
      schema,
      '--tenant',
      'acme',
      '--tool',
      'write_note',
      '--key',
      'note-2',
    ];
    const personal = cli(args);
    expect(personal.code, personal.stderr).toBe(0);
    expect(personal.stdout).not.toContain('Priya');
    expect(personal.stdout).toContain(`hmac:${hashKey('Priya Raman', secret)}`);
    const data = JSON.parse(cli([...args, '--json']).stdout);
    expect(data).toMatchObject({ user: null, userHash: hashKey('Priya Raman', secret) });
    // Without any secret the id is hidden, never shown raw.
    const none = cli(args, { TOOL_LEDGER_KEY_HASH_SECRET: undefined });
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).not.toContain('Priya');
  });

  it("scrubs a ToolFailure's reason like its message", () => {
    const args = ['inspect', '--schema', schema, '--tenant', 'acme', '--tool', 'refund', '--key', 'refund-1'];
    for (const r of [cli(args), cli([...args, '--json'])]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toContain('maria.gonzalez');
      expect(r.stdout).not.toContain('555 0199');
      expect(r.stdout).toContain('bank rejected');
    }
    expect(JSON.parse(cli([...args, '--json']).stdout).error.reason).toBe(
      'bank rejected [EMAIL], call [PHONE]',
    );
  });

  it('says a forgotten run was forgotten: when, by whom and why (the reason scrubbed)', () => {
    for (const [key, by] of [
      ['gone-1', 'ana'],
      ['maria.gonzalez@example.com', 'ben'],
    ] as const) {
      const forget = cli([
        'forget',
        '--schema',
        schema,
        '--key',
        key,
        '--yes',
        '--by',
        by,
        '--reason',
        'erasure request from maria.gonzalez@example.com',
      ]);
      expect(forget.code, forget.stderr).toBe(0);
      const r = cli(['inspect', '--schema', schema, '--key', key]);
      expect(r.code).toBe(3);
      expect(r.stdout).toContain('it was forgotten (tool-ledger forget)');
      expect(r.stdout).toMatch(new RegExp(`\\n {2}by +${by}\\n`));
      expect(r.stdout).toMatch(/\n {2}forgotten +\d{4}-\d\d-\d\dT/);
      expect(r.stdout).toContain('erasure request from [EMAIL]');
      expect(r.stdout).not.toContain('never claimed');
      const j = cli(['inspect', '--schema', schema, '--key', key, '--json']);
      expect(j.code).toBe(3);
      expect(JSON.parse(j.stdout)).toMatchObject({
        runs: [],
        forgotten: [
          { tenant: 'acme', tool: 'write_note', forgottenBy: by, reason: 'erasure request from [EMAIL]' },
        ],
      });
    }
    // A key that was never there still gets the old answer.
    const never = cli(['inspect', '--schema', schema, '--key', 'never-1']);
    expect(never.code).toBe(3);
    expect(never.stderr).toContain('never claimed');
  });

  it('gets plurals right', () => {
    const one = cli(['list', '--schema', schema, '--status', 'failed']);
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/^1 failed run:\n/);
    const two = cli(['list', '--schema', schema, '--status', 'succeeded', '--tool', 'write_note']);
    expect(two.stdout).toMatch(/^2 succeeded runs:\n/);
    const purge = cli(['purge', '--schema', schema, '--expired', '--dry-run']);
    expect(purge.stdout).toContain('0 expired rows');
  });

  it('inspect --trace still shows the run when Jaeger and VictoriaLogs cannot be reached, and says so', async () => {
    // A port nothing listens on: taken, then released.
    const closed = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const base = `http://127.0.0.1:${closed}`;
    const args = [
      'inspect',
      '--schema',
      schema,
      '--tenant',
      'acme',
      '--tool',
      'write_note',
      '--key',
      'note-1',
    ];
    const r = cli([...args, '--trace', '--jaeger-url', base, '--logs-url', base]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('result (scrubbed):');
    expect(r.stdout).toContain(`calls with this key (Jaeger ${base}, VictoriaLogs ${base}): none found`);
    expect(r.stdout).toContain(`note: Jaeger at ${base} could not be read`);
    expect(r.stdout).toContain('pass --logs-url if it runs elsewhere');
    const j = JSON.parse(
      cli([...args, '--trace', '--jaeger-url', base, '--logs-url', base, '--json']).stdout,
    );
    expect(j).toMatchObject({
      calls: [],
      callProblems: [expect.stringContaining('Jaeger'), expect.stringContaining('VictoriaLogs')],
    });
  });

  it('escapes every value it echoes: a tenant or key with terminal control sequences', () => {
    const tenant = 'acme\u001b]0;pwned\u0007\u001b[2J\u202e';
    const stats = cli(['stats', '--schema', schema, '--tenant', tenant]);
    expect(stats.code, stats.stderr).toBe(0);
    expect(stats.stdout + stats.stderr).not.toMatch(RAW_UNSAFE);
    expect(stats.stdout).toContain('"acme\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{202e}"');
    const inspect = cli(['inspect', '--schema', schema, '--tenant', tenant, '--key', `k\u001b[31m`]);
    expect(inspect.code).toBe(3);
    expect(inspect.stdout + inspect.stderr).not.toMatch(RAW_UNSAFE);
    expect(inspect.stderr).toContain('key "k\\u{1b}[31m"');
    const forget = cli(['forget', '--schema', schema, '--key', 'x', '--tenant', tenant]);
    expect(forget.stdout + forget.stderr).not.toMatch(RAW_UNSAFE);
    const usage = cli([`bogus\u001b[2J`]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).not.toMatch(RAW_UNSAFE);
  });
});
