import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliError } from '../../src/cli/cli-error.js';
import { run } from '../../src/cli/main.js';
import { createLedger, type Ledger, OutcomeUnknownError, ToolLedgerError } from '../../src/index.js';
import { hashKey } from '../../src/telemetry/key-hash.js';
import { databaseUrl, ownSchemas } from '../support/db.js';

// `tool-ledger approve`, `decline`, `list --status awaiting_approval` and `audit --verify` on real Postgres, a
// schema each, through the CLI's own entry (`run`, as main calls it) with rows the library wrote.

const SECRET = 'cli-approvals-test-secret-0123456789abcdef';

interface Result {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** The CLI as `main` runs it: its exit code, and a `CliError` said on stderr. */
async function cli(schema: string, ...argv: string[]): Promise<Result> {
  const out: string[] = [];
  const err: string[] = [];
  const io = {
    out: (s: string) => out.push(s),
    err: (s: string) => err.push(s),
    env: { ...process.env, DATABASE_URL: databaseUrl(), TOOL_LEDGER_KEY_HASH_SECRET: SECRET },
    readStdin: async () => '',
  };
  try {
    const code = await run([...argv, '--schema', schema], io);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } catch (error) {
    if (!(error instanceof CliError)) throw error;
    return { code: error.exitCode, out: out.join('\n'), err: [...err, error.message].join('\n') };
  }
}

const { admin, fresh } = ownSchemas('cli_appr');
const ledgers: Ledger[] = [];
afterAll(async () => {
  for (const ledger of ledgers) await ledger.close();
});

/** A ledger over a fresh schema with a `refund` tool that needs approval, counting its handler's runs. */
async function setUp() {
  const schema = fresh();
  const ledger = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
  ledgers.push(ledger);
  const ran: unknown[] = [];
  const refund = ledger.tool({
    name: 'refund',
    kind: 'mutation',
    approval: 'required',
    handler: (input: unknown) => {
      ran.push(input);
      return { refunded: true };
    },
  });
  const call = (input: unknown, key: string, user = 'u_7') =>
    refund.call(input, { key, tenant: 'acme', user });
  const parked = async (key: string, input: unknown = { cents: 50_000 }, user?: string) => {
    await expect(call(input, key, user)).rejects.toMatchObject({ code: 'APPROVAL_REQUIRED' });
  };
  return { schema, ledger, ran, call, parked };
}

const target = (key: string) => ['--tenant', 'acme', '--tool', 'refund', '--key', key];

describe('tool-ledger approve and decline', () => {
  it('approve: the next call with the key runs the handler once, later ones replay', async () => {
    const { schema, ran, call, parked } = await setUp();
    await parked('refund-o_1');
    const r = await cli(
      schema,
      'approve',
      ...target('refund-o_1'),
      '--by',
      'ana@acme',
      '--reason',
      'checked',
    );
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(
      /^Approved the call of tool "refund", key "refund-o_1", tenant "acme" by ana@acme at .*: checked\./,
    );
    expect(ran).toEqual([]);
    await expect(call({ cents: 50_000 }, 'refund-o_1')).resolves.toEqual({ refunded: true });
    await expect(call({ cents: 50_000 }, 'refund-o_1')).resolves.toEqual({ refunded: true });
    expect(ran).toEqual([{ cents: 50_000 }]);
    // The approval never moves to other arguments.
    await expect(call({ cents: 1 }, 'refund-o_1')).rejects.toMatchObject({ code: 'KEY_REUSED' });
  });

  it('decline: every later call answers APPROVAL_DECLINED with the reason, and the handler never runs', async () => {
    const { schema, ran, call, parked } = await setUp();
    await parked('refund-o_2');
    const r = await cli(
      schema,
      'decline',
      ...target('refund-o_2'),
      '--by',
      'bo',
      '--reason',
      'duplicate',
      '--json',
    );
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({
      decision: 'declined',
      by: 'bo',
      reason: 'duplicate',
      key: 'refund-o_2',
    });
    const declined = await call({ cents: 50_000 }, 'refund-o_2').catch((e: unknown) => e);
    expect(declined).toBeInstanceOf(ToolLedgerError);
    expect(declined).toMatchObject({ code: 'APPROVAL_DECLINED' });
    expect((declined as Error).message).toMatch(/duplicate/);
    expect(ran).toEqual([]);
  });

  it('approve --arguments-file runs the edited arguments once, both fingerprints recorded', async () => {
    const { schema, ran, call, parked } = await setUp();
    await parked('refund-o_3');
    const file = join(mkdtempSync(join(tmpdir(), 'tl-approve-')), 'edit.json');
    writeFileSync(file, '{"cents": 5000}');
    const r = await cli(
      schema,
      'approve',
      ...target('refund-o_3'),
      '--by',
      'ana',
      '--arguments-file',
      file,
      '--json',
    );
    expect(r.code, r.err).toBe(0);
    const decided = JSON.parse(r.out) as {
      edited: boolean;
      fingerprint: string;
      approvedFingerprint: string;
    };
    expect(decided.edited).toBe(true);
    expect(decided.approvedFingerprint).not.toBe(decided.fingerprint);
    await call({ cents: 50_000 }, 'refund-o_3');
    await call({ cents: 50_000 }, 'refund-o_3');
    expect(ran).toEqual([{ cents: 5000 }]);
  });

  it('refuses an anonymous decision, a decline without a reason and a file that is not JSON (exit 2)', async () => {
    const { schema, parked } = await setUp();
    await parked('refund-o_4');
    const noBy = await cli(schema, 'approve', ...target('refund-o_4'));
    expect(noBy.code).toBe(2);
    expect(noBy.err).toMatch(/approve needs --by WHO: the audit records the person who approved the call/);
    const blank = await cli(schema, 'decline', ...target('refund-o_4'), '--by', '  ', '--reason', 'x');
    expect(blank.code).toBe(2);
    const noReason = await cli(schema, 'decline', ...target('refund-o_4'), '--by', 'bo');
    expect(noReason.code).toBe(2);
    expect(noReason.err).toMatch(/decline needs --reason TEXT/);
    const file = join(mkdtempSync(join(tmpdir(), 'tl-approve-')), 'bad.json');
    writeFileSync(file, '{cents: 5000');
    const bad = await cli(
      schema,
      'approve',
      ...target('refund-o_4'),
      '--by',
      'ana',
      '--arguments-file',
      file,
    );
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/must hold the edited arguments as JSON/);
    // Nothing was decided: the call still awaits one.
    const still = await cli(schema, 'list', '--status', 'awaiting_approval', '--json');
    expect((JSON.parse(still.out) as { calls: unknown[] }).calls).toHaveLength(1);
  });

  it('a key that awaits no decision is a clear error (exit 4): no run, or another status', async () => {
    const { schema, ledger } = await setUp();
    const none = await cli(schema, 'approve', ...target('never-called'), '--by', 'ana');
    expect(none.code).toBe(4);
    expect(none.err).toMatch(/is awaiting approval: the key has no run/);
    const plain = ledger.tool({ name: 'note', kind: 'mutation', handler: () => 'ok' });
    await plain.call({}, { key: 'n-1', tenant: 'acme' });
    const done = await cli(
      schema,
      'decline',
      '--tenant',
      'acme',
      '--tool',
      'note',
      '--key',
      'n-1',
      '--by',
      'bo',
      '--reason',
      'x',
    );
    expect(done.code).toBe(4);
    expect(done.err).toMatch(/is not awaiting approval: its status is succeeded/);
  });

  it('two approvers at once: one decision is recorded, the other exits 4 naming who won', async () => {
    const { schema, ran, call, parked } = await setUp();
    await parked('refund-race');
    const [a, b] = await Promise.all([
      cli(schema, 'approve', ...target('refund-race'), '--by', 'ana', '--reason', 'ok'),
      cli(schema, 'decline', ...target('refund-race'), '--by', 'bo', '--reason', 'no'),
    ]);
    const results = [a!, b!];
    expect(results.map((r) => r.code).sort()).toEqual([0, 4]);
    const winner = results.find((r) => r.code === 0)!;
    const loser = results.find((r) => r.code === 4)!;
    const won = winner.out.startsWith('Approved')
      ? { by: 'ana', what: 'approved' }
      : { by: 'bo', what: 'declined' };
    expect(loser.err).toMatch(new RegExp(`was already ${won.what} by ${won.by} at `));
    const [row] = (
      await admin.query(`SELECT status FROM "${schema}".tool_runs WHERE idempotency_key = 'refund-race'`)
    ).rows;
    expect(row.status).toBe(won.what);
    const entries = await admin.query(`SELECT actor FROM "${schema}".tool_ledger_audit`);
    expect(entries.rows).toEqual([{ actor: won.by }]);
    if (won.what === 'approved') await call({ cents: 50_000 }, 'refund-race');
    expect(ran).toHaveLength(won.what === 'approved' ? 1 : 0);
  });
});

describe('the command APPROVAL_REQUIRED names, and a passed deadline', () => {
  it('the approve command in the error a model reads works as written, with --by filled in', async () => {
    const { schema, ran, call } = await setUp();
    const error = await call({ cents: 50_000 }, 'refund-o_7').catch((e: unknown) => e);
    const named = /tool-ledger approve (.+) --by <you>/.exec((error as Error).message);
    expect(named, (error as Error).message).not.toBeNull();
    // Plain words only here (shellWord quotes the others).
    const argv = ['approve', ...named![1]!.split(' '), '--by', 'ana'];
    const r = await cli(schema, ...argv);
    expect(r.code, r.err).toBe(0);
    await call({ cents: 50_000 }, 'refund-o_7');
    expect(ran).toHaveLength(1);
  });

  it('a decision after the deadline changes nothing and exits 4 (APPROVAL_EXPIRED)', async () => {
    const schema = fresh();
    const ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      telemetry: false,
      approvalTtlSeconds: 1,
    });
    ledgers.push(ledger);
    const tool = ledger.tool({
      name: 'refund',
      kind: 'mutation',
      approval: 'required',
      handler: () => 'ran',
    });
    await expect(tool.call({}, { key: 'late-1', tenant: 'acme' })).rejects.toMatchObject({
      code: 'APPROVAL_REQUIRED',
    });
    // Bounded: the deadline is a second away by the database clock.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const r = await cli(schema, 'approve', ...target('late-1'), '--by', 'ana');
    expect(r.code).toBe(4);
    expect(r.err).toMatch(/expired|deadline/i);
    const entries = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".tool_ledger_audit`);
    expect(entries.rows[0].n).toBe(0);
    const listed = await cli(schema, 'list', '--status', 'awaiting_approval');
    expect(listed.out).toMatch(/^No calls awaiting approval/);
  });

  it('decline takes no --arguments-file (exit 2)', async () => {
    const { schema } = await setUp();
    const r = await cli(
      schema,
      'decline',
      ...target('x'),
      '--by',
      'bo',
      '--reason',
      'no',
      '--arguments-file',
      '-',
    );
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/only an approval can edit what runs/);
  });
});

describe('tool-ledger list --status awaiting_approval', () => {
  it('lists user, deadline and scrubbed arguments; a key that may hold personal data only as its HMAC', async () => {
    const { schema, parked } = await setUp();
    const personal = 'refund-for-maria.gonzalez@example.com';
    await parked(personal, { cents: 900, note: 'call 415-555-0199' }, 'maria.gonzalez@example.com');
    await parked('refund-o_9');
    const text = await cli(schema, 'list', '--status', 'awaiting_approval');
    expect(text.code, text.err).toBe(0);
    expect(text.out).toMatch(/^2 calls awaiting approval/);
    expect(text.out).toContain(`hmac:${hashKey(personal, SECRET)}`);
    expect(text.out).toContain('refund-o_9');
    expect(text.out).toContain('u_7');
    expect(text.out).not.toContain('maria');
    expect(text.out).not.toContain('415-555-0199');
    const json = await cli(schema, 'list', '--status', 'awaiting_approval', '--tenant', 'acme', '--json');
    const { calls } = JSON.parse(json.out) as { calls: Record<string, unknown>[] };
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatchObject({
      tenant: 'acme',
      tool: 'refund',
      key: null,
      keyHash: hashKey(personal, SECRET),
    });
    expect(Date.parse(String(calls[0]!.deadline))).toBeGreaterThan(Date.now());
    expect(JSON.stringify(calls)).not.toContain('maria');
    const other = await cli(schema, 'list', '--status', 'awaiting_approval', '--tenant', 'globex');
    expect(other.out).toBe(`No calls awaiting approval in schema "${schema}".`);
  });
});

describe('tool-ledger audit --verify', () => {
  let schema: string;
  beforeAll(async () => {
    const s = await setUp();
    schema = s.schema;
    for (let i = 0; i < 4; i++) {
      await s.parked(`k${i}`);
      const decision = i % 2 === 0 ? ['approve'] : ['decline', '--reason', 'no'];
      const r = await cli(schema, decision[0]!, ...target(`k${i}`), '--by', `a${i}`, ...decision.slice(1));
      expect(r.code, r.err).toBe(0);
    }
  });

  const ids = async () =>
    (await admin.query(`SELECT id::text AS id FROM "${schema}".tool_ledger_audit ORDER BY id`)).rows.map(
      (r) => r.id as string,
    );

  /** Changes the audit table behind its trigger's back, as only a superuser can. */
  async function behindTheTrigger(statement: string, params: unknown[]) {
    const client = await admin.connect();
    try {
      await client.query('SET session_replication_role = replica');
      await client.query(statement, params);
    } finally {
      await client.query('SET session_replication_role = DEFAULT');
      client.release();
    }
  }

  it('holds as written, and names the first broken entry: altered (hash mismatch), then deleted (a gap)', async () => {
    const holds = await cli(schema, 'audit', '--verify');
    expect(holds.code, holds.err).toBe(0);
    expect(holds.out).toMatch(/holds: 4 entries over 1 tenant/);
    const [first, second, third] = await ids();
    await behindTheTrigger(`UPDATE "${schema}".tool_ledger_audit SET reason = 'yes' WHERE id = $1`, [second]);
    const altered = await cli(schema, 'audit', '--verify', '--tenant', 'acme');
    expect(altered.code).toBe(5);
    expect(altered.out).toMatch(new RegExp(`first broken entry ${second} \\(altered\\)`));
    const json = await cli(schema, 'audit', '--verify', '--json');
    expect(JSON.parse(json.out)).toMatchObject({
      holds: false,
      breaks: [{ tenant: 'acme', id: second, kind: 'altered' }],
    });
    await behindTheTrigger(`DELETE FROM "${schema}".tool_ledger_audit WHERE id = $1`, [second]);
    const gap = await cli(schema, 'audit', '--verify');
    expect(gap.code).toBe(5);
    expect(gap.out).toMatch(
      new RegExp(`first broken entry ${third} \\(missing\\): .*entry ${first} before it`),
    );
    // Another tenant's chain is its own.
    const other = await cli(schema, 'audit', '--verify', '--tenant', 'globex');
    expect(other.code).toBe(0);
  });

  it('needs --verify (exit 2)', async () => {
    const r = await cli(schema, 'audit');
    expect(r.code).toBe(2);
  });
});

describe('forget and resolve in the audit chain, and inspect showing it', () => {
  it('resolve appends its entry with the decision, inspect lists approve and resolve, and the chain holds', async () => {
    const { schema, ledger, call, parked } = await setUp();
    await parked('refund-o_5');
    expect(
      (await cli(schema, 'approve', ...target('refund-o_5'), '--by', 'ana', '--reason', 'ok')).code,
    ).toBe(0);
    await call({ cents: 50_000 }, 'refund-o_5');
    let tries = 0;
    const charge = ledger.tool({
      name: 'charge',
      kind: 'mutation',
      handler: (_: unknown, ctx) =>
        ctx.step('charge', () => {
          tries++;
          throw new OutcomeUnknownError('the provider hung up');
        }),
    });
    await expect(charge.call({ cents: 1 }, { key: 'ch-1', tenant: 'acme' })).rejects.toMatchObject({
      code: 'OUTCOME_UNKNOWN',
    });
    const resolved = await cli(
      schema,
      'resolve',
      '--tenant',
      'acme',
      '--key',
      'ch-1',
      '--failed',
      'card declined',
      '--yes',
      '--by',
      'cy',
      '--reason',
      'seen in the provider',
    );
    expect(resolved.code, resolved.err).toBe(0);
    const [entry] = (
      await admin.query(
        `SELECT actor, action, tool_name, key_hash, fingerprint, reason, detail FROM "${schema}".tool_ledger_audit WHERE action = 'resolve'`,
      )
    ).rows;
    const [run] = (
      await admin.query(`SELECT parameter_hash FROM "${schema}".tool_runs WHERE idempotency_key = 'ch-1'`)
    ).rows;
    expect(entry).toEqual({
      actor: 'cy',
      action: 'resolve',
      tool_name: 'charge',
      key_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      fingerprint: run.parameter_hash,
      reason: 'seen in the provider',
      detail: { resolution: 'failed' },
    });
    expect(entry.key_hash).not.toContain('ch-1');
    expect(tries).toBe(1);
    const approved = await cli(schema, 'inspect', ...target('refund-o_5'));
    expect(approved.out).toMatch(
      /audit chain \(tool_ledger_audit\):\n {2}\S+ approve by ana: ok \[entry \d+\]/,
    );
    const settled = await cli(
      schema,
      'inspect',
      '--tenant',
      'acme',
      '--tool',
      'charge',
      '--key',
      'ch-1',
      '--json',
    );
    expect(JSON.parse(settled.out).audit).toEqual([
      expect.objectContaining({ action: 'resolve', by: 'cy', reason: 'seen in the provider' }),
    ]);
    expect(settled.err).toBe('');
    const verified = await cli(schema, 'audit', '--verify');
    expect(verified.out).toMatch(/holds: 2 entries over 1 tenant/);
  });

  it('forget appends one entry per run deleted, in each run tenant chain; inspect shows them for the forgotten key', async () => {
    const { schema, ledger } = await setUp();
    const note = ledger.tool({ name: 'note', kind: 'mutation', handler: () => 'ok' });
    await note.call({ n: 1 }, { key: 'gone-1', tenant: 'acme' });
    await note.call({ n: 2 }, { key: 'gone-1', tenant: 'globex' });
    const dry = await cli(schema, 'forget', '--key', 'gone-1');
    expect(dry.code).toBe(0);
    expect(
      (await admin.query(`SELECT count(*)::int AS n FROM "${schema}".tool_ledger_audit`)).rows[0].n,
    ).toBe(0);
    const r = await cli(
      schema,
      'forget',
      '--key',
      'gone-1',
      '--yes',
      '--by',
      'dpo',
      '--reason',
      'erasure 88',
    );
    expect(r.code, r.err).toBe(0);
    const entries = (
      await admin.query(
        `SELECT tenant_id, action, actor, reason, run_id::text AS run_id, fingerprint FROM "${schema}".tool_ledger_audit ORDER BY tenant_id`,
      )
    ).rows;
    expect(entries).toEqual([
      expect.objectContaining({ tenant_id: 'acme', action: 'forget', actor: 'dpo', reason: 'erasure 88' }),
      expect.objectContaining({ tenant_id: 'globex', action: 'forget', actor: 'dpo', reason: 'erasure 88' }),
    ]);
    for (const e of entries) expect(e.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    const shown = await cli(schema, 'inspect', '--key', 'gone-1');
    expect(shown.code).toBe(3);
    expect(shown.out).toMatch(/it was forgotten/);
    expect(shown.out).toMatch(
      /audit chain \(tool_ledger_audit\):\n {2}\S+ forget by dpo: erasure 88 \[entry \d+\]/,
    );
    const verified = await cli(schema, 'audit', '--verify', '--json');
    expect(JSON.parse(verified.out)).toMatchObject({ holds: true, entries: 2, tenants: 2 });
  });

  it('a change whose audit entry cannot be appended is rolled back: nothing forgotten unaudited', async () => {
    const { schema, ledger } = await setUp();
    const note = ledger.tool({ name: 'note', kind: 'mutation', handler: () => 'ok' });
    await note.call({}, { key: 'kept-1', tenant: 'acme' });
    // Any failure of the append (here the table refusing every insert) must take the delete with it.
    const client = await admin.connect();
    try {
      await client.query(`CREATE FUNCTION "${schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'audit refused for the test'; END $$`);
      await client.query(
        `CREATE TRIGGER refuse_insert BEFORE INSERT ON "${schema}".tool_ledger_audit FOR EACH ROW EXECUTE FUNCTION "${schema}".refuse()`,
      );
    } finally {
      client.release();
    }
    const r = await cli(schema, 'forget', '--key', 'kept-1', '--yes', '--by', 'dpo');
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/audit refused for the test/);
    const left = await admin.query(
      `SELECT count(*)::int AS n FROM "${schema}".tool_runs WHERE idempotency_key = 'kept-1'`,
    );
    expect(left.rows[0].n).toBe(1);
    const records = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".tool_runs_forgotten`);
    expect(records.rows[0].n).toBe(0);
  });
});
