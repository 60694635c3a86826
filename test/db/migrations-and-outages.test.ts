import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { parameterHash } from '../../src/contract/fingerprint.js';
import {
  createLedger,
  type LedgerOptions,
  migrationSql,
  ToolFailure,
  ToolLedgerError,
} from '../../src/index.js';
import { MIGRATIONS } from '../../src/ledger/migrations.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';

const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const schemas: string[] = [];
const fresh = () => {
  const schema = uniqueSchema('mig');
  schemas.push(schema);
  return schema;
};
afterAll(async () => {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

describe('migrations', () => {
  it('apply once when many ledgers start at the same moment on separate connections', async () => {
    const schema = fresh();
    const ledgers = await Promise.all(
      Array.from({ length: 8 }, () =>
        createLedger({ connectionString: databaseUrl(), schema, telemetry: false, poolSize: 1 }),
      ),
    );
    const { rows } = await admin.query(`SELECT version FROM "${schema}".tool_ledger_migrations`);
    expect(rows).toEqual(MIGRATIONS.map(({ version }) => ({ version })));
    const tool = ledgers[3]!.tool({ name: 'x', kind: 'mutation', handler: () => 1 });
    expect((await tool.invoke({}, { key: 'k' })).outcome).toBe('executed');
    await Promise.all(ledgers.map((l) => l.close()));
  });

  it('print as SQL a DBA can apply by hand, twice without harm, before a ledger with migrate: false', async () => {
    const schema = fresh();
    const script = migrationSql(schema);
    expect(script).toContain(
      `CREATE UNIQUE INDEX tool_runs_key_idx ON "${schema}".tool_runs (tenant_id, tool_name, idempotency_key)`,
    );
    await admin.query(script);
    await admin.query(script);
    const ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      migrate: false,
      telemetry: false,
    });
    const tool = ledger.tool({ name: 'x', kind: 'mutation', handler: () => 'ok' });
    expect(await tool.call({}, { key: 'k' })).toBe('ok');
    await ledger.close();
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".tool_ledger_migrations`);
    expect(rows).toEqual([{ n: MIGRATIONS.length }]);
  });
});

/** A new schema with the default layout's migrations up to `version` applied by hand, as an older release left it. */
async function schemaAtVersion(version: number): Promise<string> {
  const schema = fresh();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.query(
    `CREATE TABLE "${schema}".tool_ledger_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
  );
  for (const migration of MIGRATIONS.filter((m) => m.version <= version)) {
    for (const statement of migration.up(schema).split(/;\n/)) await admin.query(statement);
    await admin.query(`INSERT INTO "${schema}".tool_ledger_migrations VALUES ($1, $2)`, [
      migration.version,
      migration.name,
    ]);
  }
  return schema;
}

describe('a schema of an earlier version', () => {
  it('migrates with its rows: a run in flight completes, a completed one replays, the in-progress index goes', async () => {
    const schema = await schemaAtVersion(3);
    const t = `"${schema}".tool_runs`;
    const hash = (amount: number) => parameterHash({ amount });
    await admin.query(
      `INSERT INTO ${t} (tenant_id, tool_name, idempotency_key, parameter_hash, status, lease_owner, lease_expires_at,
         result_json, completed_at, expires_at)
       VALUES ('default', 'x', 'done', $1, 'succeeded', NULL, NULL, '"old result"', now(), now() + interval '1 day'),
              ('default', 'x', 'stalled', $2, 'in_progress', 'gone:1', now() - interval '1 second', NULL, NULL,
               now() + interval '1 day')`,
      [hash(1), hash(2)],
    );
    const ledger = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    const { rows: versions } = await admin.query(
      `SELECT version FROM "${schema}".tool_ledger_migrations ORDER BY 1`,
    );
    expect(versions).toEqual(MIGRATIONS.map(({ version }) => ({ version })));
    const { rows: indexes } = await admin.query(
      `SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY 1`,
      [schema],
    );
    expect(indexes.map((r) => r.indexname)).not.toContain('tool_runs_in_progress_idx');
    let runs = 0;
    const tool = ledger.tool({ name: 'x', kind: 'mutation', handler: () => `new ${++runs}` });
    expect(await tool.invoke({ amount: 1 }, { key: 'done' })).toMatchObject({
      outcome: 'replayed',
      value: 'old result',
    });
    expect(await tool.invoke({ amount: 2 }, { key: 'stalled' })).toMatchObject({
      outcome: 'executed',
      attempt: 2,
    });
    expect(await tool.invoke({ amount: 3 }, { key: 'fresh' })).toMatchObject({
      outcome: 'executed',
      attempt: 1,
    });
    await ledger.close();
  });
});

describe('a schema of version 7', () => {
  /** A schema at version 7 with rows in every table, migrated by a ledger's start or by the printed script. */
  async function schemaAtVersion7(): Promise<string> {
    const schema = await schemaAtVersion(7);
    const hash = (amount: number) => parameterHash({ amount });
    await admin.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, lease_owner,
         lease_expires_at, result_json, completed_at, expires_at, steps, step_token)
       VALUES ('t1', 'x', 'done', $1, 'succeeded', NULL, NULL, '"old result"', now(), now() + interval '1 day', NULL, NULL),
              ('t1', 'x', 'stalled', $2, 'in_progress', 'gone:1', now() - interval '1 second', NULL, NULL,
               now() + interval '1 day', '{"charge": {"status": "succeeded", "attempt": 1, "result": "\\"ch_1\\""}}', 'tok'),
              ('t2', 'x', 'done', $1, 'succeeded', NULL, NULL, '"other tenant"', now(), now() + interval '1 day', NULL, NULL),
              ('t1', 'x', 'expired', $1, 'succeeded', NULL, NULL, '"old"', now(), now() - interval '1 second', NULL, NULL)`,
      [hash(1), hash(2)],
    );
    for (const audit of ['tool_runs_forgotten', 'tool_runs_resolved']) {
      const extra =
        audit === 'tool_runs_forgotten'
          ? ['forgotten_by', "'ops'"]
          : ['resolution, resolved_by', "'rerun', 'ops'"];
      await admin.query(
        `INSERT INTO "${schema}".${audit} (run_id, tenant_id, tool_name, key_attribute, key_value, ${extra[0]})
         VALUES (1, 't1', 'x', 'tool_ledger.idempotency.key', 'gone', ${extra[1]})`,
      );
    }
    return schema;
  }

  async function checkMigrated(schema: string) {
    // Migrates a schema the script left at version 7; finds the script's work done otherwise.
    const ledger = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    const keys = await admin.query(
      `SELECT c.conrelid::regclass::text AS tab, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
       JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1 AND c.contype IN ('p', 'u')
         AND c.conrelid::regclass::text NOT LIKE '%tool_ledger_%' ORDER BY 1`,
      [schema],
    );
    // Every unique constraint of every table that holds a tenant's rows starts with the tenant (Citus).
    expect(
      keys.rows.map((r) => [r.tab.replace(`"${schema}".`, '').replace(`${schema}.`, ''), r.def]),
    ).toEqual([
      ['tool_runs', 'PRIMARY KEY (tenant_id, tool_name, idempotency_key)'],
      ['tool_runs_forgotten', 'PRIMARY KEY (tenant_id, id)'],
      ['tool_runs_resolved', 'PRIMARY KEY (tenant_id, id)'],
    ]);
    const { rows: indexes } = await admin.query(
      `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = 'tool_runs' ORDER BY 1`,
      [schema],
    );
    // Migration 13 dropped migration 8's BRIN on expires_at.
    expect(indexes.map((r) => r.indexname)).toEqual([
      'tool_runs_created_brin',
      'tool_runs_job_idx',
      'tool_runs_pkey',
    ]);
    expect(indexes[0].indexdef).toMatch(/USING brin \(created_at, id\)/);
    const { rows: audits } = await admin.query(
      `SELECT (SELECT count(*)::int FROM "${schema}".tool_runs_forgotten) AS forgotten,
              (SELECT count(*)::int FROM "${schema}".tool_runs_resolved) AS resolved`,
    );
    expect(audits).toEqual([{ forgotten: 1, resolved: 1 }]);

    let runs = 0;
    let stepRuns = 0;
    const tool = ledger.tool({
      name: 'x',
      kind: 'mutation',
      handler: async (_input, ctx) => {
        // The step the stalled run recorded before the migration replays under the new key.
        const charge = await ctx.step('charge', () => ++stepRuns);
        return `new ${++runs} ${charge}`;
      },
    });
    expect(await tool.invoke({ amount: 1 }, { key: 'done', tenant: 't1' })).toMatchObject({
      outcome: 'replayed',
      value: 'old result',
    });
    expect(await tool.invoke({ amount: 1 }, { key: 'done', tenant: 't2' })).toMatchObject({
      outcome: 'replayed',
      value: 'other tenant',
    });
    expect(await tool.invoke({ amount: 2 }, { key: 'stalled', tenant: 't1' })).toMatchObject({
      outcome: 'executed',
      attempt: 2,
      value: 'new 1 ch_1',
    });
    expect(stepRuns).toBe(0);
    expect(await tool.invoke({ amount: 2 }, { key: 'stalled', tenant: 't1' })).toMatchObject({
      outcome: 'replayed',
      value: 'new 1 ch_1',
    });
    expect(await tool.invoke({ amount: 3 }, { key: 'fresh', tenant: 't1' })).toMatchObject({
      outcome: 'executed',
      attempt: 1,
    });
    // The purge goes by the key now that `id` has no index.
    expect(await ledger.purgeExpired()).toBe(1);
    const { rows } = await admin.query(
      `SELECT tenant_id, idempotency_key, status FROM "${schema}".tool_runs ORDER BY 1, 2`,
    );
    expect(rows).toEqual([
      { tenant_id: 't1', idempotency_key: 'done', status: 'succeeded' },
      { tenant_id: 't1', idempotency_key: 'fresh', status: 'succeeded' },
      { tenant_id: 't1', idempotency_key: 'stalled', status: 'succeeded' },
      { tenant_id: 't2', idempotency_key: 'done', status: 'succeeded' },
    ]);
    await ledger.close();
  }

  it("migrates to the tenant-first key at a ledger's start, keeping every row, step and audit record", async () => {
    await checkMigrated(await schemaAtVersion7());
  });

  it('migrates to the tenant-first key by the printed script a DBA applies', async () => {
    const schema = await schemaAtVersion7();
    const script = migrationSql(schema);
    expect(script).toContain('-- 8: tool_runs_tenant_key');
    await admin.query(script);
    await admin.query(script);
    const { rows } = await admin.query(
      `SELECT max(version)::int AS v FROM "${schema}".tool_ledger_migrations`,
    );
    expect(rows).toEqual([{ v: Math.max(...MIGRATIONS.map((m) => m.version)) }]);
    await checkMigrated(schema);
  });
});

describe('an unreachable database', () => {
  it('fails createLedger with LEDGER_UNAVAILABLE, retryable, within the connect timeout', async () => {
    const error = await createLedger({
      connectionString: 'postgres://postgres@127.0.0.1:1/none',
      connectTimeoutSeconds: 2,
      telemetry: false,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolLedgerError);
    expect(error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
    expect((error as Error).message).toMatch(/retry/i);
  });

  it('fails a call with LEDGER_UNAVAILABLE without running the handler', async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
    let down = false;
    const flaky = {
      query: (text: string, params?: unknown[]) => {
        if (down)
          return Promise.reject(
            Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
          );
        return pool.query(text, params);
      },
      connect: () => pool.connect(),
      end: () => pool.end(),
    };
    const ledger = await createLedger({ pool: flaky as never, schema: fresh(), telemetry: false });
    let calls = 0;
    const tool = ledger.tool({ name: 'x', kind: 'mutation', handler: () => ++calls });
    down = true;
    const error = await tool.call({}, { key: 'k' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
    expect(calls).toBe(0);
    down = false;
    expect(await tool.call({}, { key: 'k' })).toBe(1);
    await ledger.close();
    await pool.end();
  });
});

/**
 * A ledger on a real pool whose every statement fails while `down` is set, as when the database drops off the
 * network, with a `charge_card` tool whose handler takes the database down after its side effect.
 */
async function ledgerThatLosesItsDatabase(outcome: () => unknown, options: LedgerOptions = {}) {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4 });
  const state = { down: false, runs: 0, completionsDown: false };
  const refused = () =>
    Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
  const flaky = {
    query: (text: string, params?: unknown[]) =>
      // Prepared statements arrive as { name, text, values }.
      state.down ||
      (state.completionsDown &&
        String((text as unknown as { text?: string }).text ?? text).includes('completed_at = now()'))
        ? refused()
        : pool.query(text, params),
    connect: () => pool.connect(),
    end: () => pool.end(),
  };
  const schema = fresh();
  const ledger = await createLedger({ pool: flaky as never, schema, telemetry: false, ...options });
  const tool = ledger.tool({
    name: 'charge_card',
    kind: 'mutation',
    handler: () => {
      state.runs++;
      state.down = true;
      return outcome();
    },
  });
  const runs = async () => (await admin.query(`SELECT status, result_json FROM "${schema}".tool_runs`)).rows;
  const close = async () => {
    await ledger.close();
    await pool.end();
  };
  return { state, tool, runs, close, ledger, pool };
}

describe('a database that fails while saving a result', () => {
  it('tells the caller, keeps the result, saves it when the database is back, and replays it to a retry', async () => {
    const { state, tool, runs, close } = await ledgerThatLosesItsDatabase(() => ({ chargeId: 'ch_1' }));

    const error = await tool.call({ amount: 5 }, { key: 'charge-1' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
    expect((error as Error).message).toMatch(/ran, but the database failed while saving its result/);
    expect((error as Error).message).toMatch(/saving its result \(connect ECONNREFUSED 127\.0\.0\.1:5432\)/);
    expect((error as Error).message).toMatch(/Retry with the same key/);
    expect((error as Error).message).not.toMatch(/Nothing was decided/);

    state.down = false;
    const retried = await tool.invoke({ amount: 5 }, { key: 'charge-1' });

    expect(retried).toMatchObject({ outcome: 'replayed', value: { chargeId: 'ch_1' } });
    expect(state.runs).toBe(1);
    expect(await runs()).toEqual([{ status: 'succeeded', result_json: { chargeId: 'ch_1' } }]);
    await close();
  });

  it('saves a final failure the same way, so a retry replays it instead of running the handler again', async () => {
    const { state, tool, close } = await ledgerThatLosesItsDatabase(() => {
      throw new ToolFailure('Card declined.', { reason: 'card_declined' });
    });
    await expect(tool.call({}, { key: 'charge-3' })).rejects.toMatchObject({
      code: 'TOOL_FAILED',
      replayed: false,
    });

    state.down = false;
    const retried = await tool.call({}, { key: 'charge-3' }).catch((e: unknown) => e);

    expect(retried).toMatchObject({ code: 'TOOL_FAILED', replayed: true, reason: 'card_declined' });
    expect(state.runs).toBe(1);
    await close();
  });

  it('stops trying when the ledger closes, leaving the row in progress for its lease to lapse', async () => {
    const { state, tool, runs, ledger, pool } = await ledgerThatLosesItsDatabase(() => ({
      chargeId: 'ch_2',
    }));
    await expect(tool.call({}, { key: 'charge-2' })).rejects.toMatchObject({ code: 'LEDGER_UNAVAILABLE' });

    await ledger.close({ timeoutSeconds: 0.3 });
    // The pool stays open and the database comes back: only the ledger's close can keep the save from landing.
    state.down = false;
    await new Promise((resolve) => setTimeout(resolve, 1500));

    expect((await runs()).map((r) => r.status)).toEqual(['in_progress']);
    await pool.end();
  });

  it('saves a kept result before a retry from this process could take over its lapsed lease', async () => {
    const { state, tool, close } = await ledgerThatLosesItsDatabase(() => ({ chargeId: 'ch_5' }), {
      leaseSeconds: 0.2,
    });
    state.completionsDown = true;
    await expect(tool.call({}, { key: 'charge-5' })).rejects.toMatchObject({ code: 'LEDGER_UNAVAILABLE' });
    state.down = false;
    // The lease lapses while the result cannot be saved.
    await new Promise((resolve) => setTimeout(resolve, 500));
    state.completionsDown = false;
    expect(await tool.invoke({}, { key: 'charge-5' })).toMatchObject({
      outcome: 'replayed',
      value: { chargeId: 'ch_5' },
    });
    expect(state.runs).toBe(1);
    await close();
  });

  it('keeps no more than maxUnsavedResults, and tells the caller plainly when one was not kept', async () => {
    const { state, tool, runs, close } = await ledgerThatLosesItsDatabase(() => ({ chargeId: 'ch_3' }), {
      maxUnsavedResults: 1,
    });
    // Completions keep failing between the calls, so the first kept result cannot land and free its place.
    state.completionsDown = true;
    const kept = await tool.call({}, { key: 'charge-3' }).catch((e: unknown) => e);
    expect(kept).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
    state.down = false;
    const refused = await tool.call({}, { key: 'charge-4' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ToolLedgerError);
    expect(refused).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: false });
    expect((refused as Error).message).toMatch(/keeps 1 unsaved result .*maxUnsavedResults=1.*not kept/);
    expect((refused as Error).message).toMatch(/runs the tool again/);
    // The kept one still lands once the database answers.
    state.down = false;
    state.completionsDown = false;
    for (let i = 0; i < 100 && (await runs()).filter((r) => r.status === 'succeeded').length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await runs()).map((r) => r.status).sort()).toEqual(['in_progress', 'succeeded']);
    await close();
  });
});

describe('a pool of one connection', () => {
  it('still lets a duplicate wait for the first execution (the listener is not taken from the pool)', async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
    const ledger = await createLedger({ pool, schema: fresh(), telemetry: false, waitSeconds: 10 });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let calls = 0;
    const tool = ledger.tool({
      name: 'slow',
      kind: 'mutation',
      handler: async () => {
        calls++;
        await gate;
        return 'done';
      },
    });
    const first = tool.invoke({}, { key: 'k' });
    await expect.poll(() => calls).toBe(1);
    const duplicate = tool.invoke({}, { key: 'k' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    expect((await first).outcome).toBe('executed');
    expect(await duplicate).toMatchObject({ outcome: 'replayed', value: 'done' });
    await ledger.close();
    await pool.end();
  });
});

describe('a purge batch past statementTimeoutSeconds', () => {
  it('says what to do and rolls the batch back; a purge after it takes the rows', async () => {
    const schema = fresh();
    const ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      telemetry: false,
      ttlSeconds: 1,
      statementTimeoutSeconds: 0.5,
    });
    const tool = ledger.tool({ name: 'ping', kind: 'mutation', handler: () => 'pong' });
    for (const key of ['a', 'b', 'c']) await tool.call({}, { key });
    await admin.query(`UPDATE "${schema}".tool_runs SET expires_at = now() - interval '1 minute'`);
    // EXCLUSIVE lets the purge read the table's size but holds its batch, which must lock rows, past the timeout.
    const locker = await admin.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`LOCK TABLE "${schema}".tool_runs IN EXCLUSIVE MODE`);
      const purge = ledger.purgeExpired({ batchSize: 2 });
      await expect(purge).rejects.toMatchObject({
        code: 'LEDGER_UNAVAILABLE',
        retryable: true,
        message: expect.stringMatching(/purge batch of 2 rows ran past statementTimeoutSeconds.*pg_locks/),
      });
      await locker.query('ROLLBACK');
    } finally {
      locker.release();
    }
    expect(await ledger.purgeExpired({ batchSize: 2 })).toBe(3);
    await ledger.close();
  });
});
