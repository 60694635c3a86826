import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger, OutcomeUnknownError } from '../../src/index.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';
import { CLI_BIN, ensureBuiltCli } from './support/cli-build.js';

// `tool-ledger list --status unknown` and `tool-ledger resolve` (issue 22): the real built binary against rows the
// library left in status unknown, and what the next call with each key then does.

const schema = uniqueSchema('resolve');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
let ledger: Ledger;
let runs = 0;

function cli(args: string[]) {
  const r = spawnSync(process.execPath, [CLI_BIN, ...args, '--schema', schema], {
    env: { ...process.env, DATABASE_URL: databaseUrl() },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A charge whose provider hangs up on the first try: under 'fail' the run is marked unknown. */
function chargeTool() {
  return ledger.tool({
    name: 'charge_card',
    kind: 'mutation',
    handler: async (_: unknown, ctx) =>
      ctx.step('charge', () => {
        runs++;
        if (runs <= 3) throw new OutcomeUnknownError('the provider hung up after the request was sent');
        return { chargeId: `ch_${runs}` };
      }),
  });
}

describe('settling unknown outcomes from the CLI', () => {
  let tool: ReturnType<typeof chargeTool>;

  beforeAll(async () => {
    ensureBuiltCli();
    ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      telemetry: false,
      ...TEST_DISTRIBUTION,
    });
    tool = chargeTool();
    for (const key of ['k-result', 'k-failed', 'k-rerun']) {
      await expect(tool.call({}, { key })).rejects.toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    }
  });

  afterAll(async () => {
    await ledger?.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('lists the runs in status unknown, each with why, and stats counts them', () => {
    const listed = cli(['list', '--status', 'unknown', '--json']);
    expect(listed.code).toBe(0);
    const runs = (JSON.parse(listed.stdout) as { runs: { key: string; why: string }[] }).runs;
    expect(runs.map((r) => r.key).sort()).toEqual(['k-failed', 'k-rerun', 'k-result']);
    for (const run of runs) expect(run.why).toMatch(/^started, never recorded: charge \(attempt 1\); /);
    const text = cli(['list', '--status', 'unknown']).stdout;
    expect(text).toMatch(
      /why unknown:\n {2}default\/charge_card k-\w+: started, never recorded: charge \(attempt 1\)/,
    );
    const stats = cli(['stats']);
    expect(stats.stdout).toMatch(/: 3 \(in_progress 0, succeeded 0, failed 0, unknown 3; /);
    expect(JSON.parse(cli(['stats', '--json']).stdout).totals).toMatchObject({ total: 3, unknown: 3 });
  });

  it('resolve without --yes is a dry run that changes nothing, and --yes needs --by', async () => {
    const dry = cli(['resolve', '--key', 'k-result', '--rerun']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      /1 run would be settled as rerun \(dry run: nothing changed; pass --yes --by WHO/,
    );
    expect(JSON.parse(cli(['resolve', '--key', 'k-result', '--rerun', '--json']).stdout)).toMatchObject({
      dryRun: true,
      runs: [{ tool: 'charge_card', key: 'k-result' }],
    });
    const noBy = cli(['resolve', '--key', 'k-result', '--rerun', '--yes']);
    expect(noBy.code).toBe(2);
    expect(noBy.stderr).toMatch(/resolve --yes needs --by WHO/);
    const { rows } = await pool.query(
      `SELECT status FROM "${schema}".tool_runs WHERE idempotency_key = 'k-result'`,
    );
    expect(rows).toEqual([{ status: 'unknown' }]);
  });

  it("inspect shows the run's steps, and which one's outcome is unknown", () => {
    const shown = cli(['inspect', '--key', 'k-result']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/steps \(results scrubbed\):/);
    expect(shown.stdout).toMatch(/charge\s+started, never recorded: outcome unknown\s+1/);
    const json = JSON.parse(cli(['inspect', '--key', 'k-result', '--json']).stdout) as {
      runs: { steps: { name: string; unknown: boolean }[] }[];
    };
    expect(json.runs[0]?.steps).toMatchObject([{ name: 'charge', unknown: true }]);
  });

  it('settles with a result, a final failure or a rerun, and the next call follows it', async () => {
    // Act
    const result = cli([
      'resolve',
      '--key',
      'k-result',
      '--result',
      '{"chargeId":"ch_seen"}',
      '--reason',
      'in Stripe',
      '--yes',
      '--by',
      'ana',
    ]);
    const failed = cli([
      'resolve',
      '--key',
      'k-failed',
      '--failed',
      'Not charged: card expired',
      '--yes',
      '--by',
      'ana',
    ]);
    const rerun = cli(['resolve', '--key', 'k-rerun', '--rerun', '--yes', '--by', 'ana']);

    // Assess
    expect(result).toMatchObject({ code: 0 });
    expect(result.stdout).toMatch(/Settled 1 run as result \(recorded as resolved by ana\)/);
    expect(failed.code).toBe(0);
    expect(rerun.code).toBe(0);
    await expect(tool.invoke({}, { key: 'k-result' })).resolves.toMatchObject({
      outcome: 'replayed',
      value: { chargeId: 'ch_seen' },
    });
    await expect(tool.call({}, { key: 'k-failed' })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      message: 'Not charged: card expired',
      reason: 'resolved_by_operator',
    });
    const before = runs;
    // The step that was unknown counts as not done: it runs again rather than coming back unknown.
    await expect(tool.invoke({}, { key: 'k-rerun' })).resolves.toMatchObject({
      outcome: 'executed',
      value: { chargeId: `ch_${before + 1}` },
    });
    const audit = await pool.query(
      `SELECT key_value, resolution, resolved_by, reason FROM "${schema}".tool_runs_resolved ORDER BY id`,
    );
    expect(audit.rows).toEqual([
      { key_value: 'k-result', resolution: 'result', resolved_by: 'ana', reason: 'in Stripe' },
      { key_value: 'k-failed', resolution: 'failed', resolved_by: 'ana', reason: null },
      { key_value: 'k-rerun', resolution: 'rerun', resolved_by: 'ana', reason: null },
    ]);
  });

  it('refuses a key with no unknown run, and a command line without exactly one resolution', () => {
    expect(cli(['resolve', '--key', 'k-result', '--rerun', '--yes', '--by', 'ana'])).toMatchObject({
      code: 3,
    });
    const both = cli(['resolve', '--key', 'k-x', '--rerun', '--failed', 'no']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/exactly one of --result JSON/);
    expect(cli(['resolve', '--key', 'k-x', '--result', '{not json'])).toMatchObject({ code: 2 });
  });
});

describe('the CLI and a short key-hash secret', () => {
  it('refuses one under 16 bytes, as createLedger does, without printing it', () => {
    const r = spawnSync(process.execPath, [CLI_BIN, 'hash-key', '--schema', schema], {
      env: { ...process.env, DATABASE_URL: databaseUrl(), TOOL_LEDGER_KEY_HASH_SECRET: 'short-secret' },
      input: 'maria@example.com',
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/is 12 bytes long; a key-hash secret needs at least 16 random bytes/);
    expect(r.stderr).not.toContain('short-secret');
  });
});
