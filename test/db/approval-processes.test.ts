import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type LedgerOptions } from '../../src/index.js';
import { databaseUrl, postgresBackend } from '../support/db.js';

// Approvals across processes on real Postgres (docs/ledger.md, "Approvals"): a decision outlives the process that
// asked for it, a kill -9 mid-handler of an approved run, and a decline met by a process that never saw the key.
// pgbouncer-contract.test.ts runs this file again through PgBouncer in transaction mode.

const WORKER = join(import.meta.dirname, '../fixtures/approval-worker.ts');
// A worker that does not answer in this long is stuck: the test fails rather than hangs.
const WORKER_LIMIT_MS = 45_000;

interface WorkerResult {
  readonly outcome?: string;
  /** A mutation's result, or a job's status (`jobId`, `status`, `attempt`). */
  readonly value?: { refunded?: number; by?: number; jobId?: string; status?: string };
  readonly attempt?: number;
  readonly error?: string;
  readonly message?: string;
}

interface Worker {
  readonly child: ChildProcess;
  /** Resolves when the handler has started (mode `hang`). */
  readonly started: Promise<void>;
  /** The worker's answer; undefined when it was killed before giving one. */
  readonly result: Promise<WorkerResult | undefined>;
}

/** The worker's modes (test/fixtures/approval-worker.ts): `refund` as a mutation, or (`job-`) as a job. */
type Mode = 'once' | 'hang' | 'job-once' | 'job-hang';

function start(
  mode: Mode,
  url: string,
  schema: string,
  key: string,
  cents: number,
  layout: LedgerOptions,
): Worker {
  const args = [WORKER, mode, url, schema, key, String(cents), JSON.stringify(layout)];
  const child = spawn(process.execPath, ['--import', 'tsx', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let onStarted = () => {};
  const started = new Promise<void>((resolve) => {
    onStarted = resolve;
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('STARTED\n')) onStarted();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const limit = setTimeout(() => child.kill('SIGKILL'), WORKER_LIMIT_MS);
  const result = new Promise<WorkerResult | undefined>((resolve, reject) => {
    child.on('exit', (code, signal) => {
      clearTimeout(limit);
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last) as WorkerResult);
      else if (signal === 'SIGKILL' && mode.endsWith('hang')) resolve(undefined);
      else reject(new Error(`approval worker (${mode}) exited with ${code ?? signal}: ${err}${out}`));
    });
  });
  return { child, started, result };
}

// The table layout, and the partitioned one, whose approved row moves between partitions as its expiry changes.
const LAYOUTS: ReadonlyArray<readonly [string, LedgerOptions]> = [
  ['the table layout', {}],
  ['the partitioned layout', { layout: 'partitioned', partitionWidthSeconds: 3600 }],
];

describe.each(LAYOUTS)('approvals across processes on real Postgres, %s', (_layoutName, layout) => {
  const backend = postgresBackend(layout);
  let schema: string;

  beforeAll(async () => {
    const ledger = await backend.open();
    schema = ledger.schema;
    await backend.sql(
      `CREATE TABLE "${schema}".side_effects (pid integer, attempt integer, phase text, cents integer)`,
    );
  });

  /** Decides with a ledger of this process: never the worker that asked, nor the one that runs. */
  async function decide(key: string, decision: 'approve' | 'decline', extra: Record<string, unknown> = {}) {
    const desk = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false, ...layout });
    try {
      const target = { tenant: 'acme', tool: 'refund', key, by: 'ops@acme' };
      return decision === 'approve'
        ? await desk.approve({ ...target, ...extra })
        : await desk.decline({ ...target, reason: 'duplicate refund', ...extra });
    } finally {
      await desk.close();
    }
  }

  const effects = (key: string) =>
    backend.sql<{ attempt: number; phase: string; cents: number }>(
      `SELECT e.attempt, e.phase, e.cents FROM "${schema}".side_effects e
       WHERE e.pid = ANY($1::int[]) ORDER BY e.attempt, e.phase DESC`,
      [pids.get(key) ?? []],
    );
  const pids = new Map<string, number[]>();
  const run = (mode: Mode, key: string, cents: number) => {
    const worker = start(mode, databaseUrl(), schema, key, cents, layout);
    pids.set(key, [...(pids.get(key) ?? []), worker.child.pid ?? -1]);
    return worker;
  };
  const row = async (key: string) =>
    (
      await backend.sql<{ status: string; attempt: number; approval: Record<string, unknown> | null }>(
        `SELECT status, attempt, approval FROM "${schema}".tool_runs WHERE idempotency_key = $1`,
        [key],
      )
    )[0];

  it.each([
    ['as asked', undefined, 500],
    ['with the approver’s edited arguments', { order: 'o_1', cents: 300 }, 300],
  ])(
    'approve (%s), kill -9 mid-handler, take over after the lease: one run completes and the approval holds',
    async (_name, edit, ran) => {
      const key = edit ? 'k-killed-edited' : 'k-killed';
      expect(await run('once', key, 500).result).toMatchObject({ error: 'APPROVAL_REQUIRED' });
      const decision = await decide(key, 'approve', edit ? { arguments: edit, reason: 'partial' } : {});
      expect(decision.edited ?? false).toBe(edit !== undefined);

      // The approved run starts in a process that dies mid-handler with its 1 s lease held.
      const victim = run('hang', key, 500);
      await victim.started;
      victim.child.kill('SIGKILL');
      expect(await victim.result).toBeUndefined();
      const held = await row(key);
      expect(held?.status).toBe('in_progress');
      expect(held?.approval).toMatchObject({ decision: 'approved', by: 'ops@acme' });

      // A new process waits out the dead owner's lease, takes the run over, and runs it under the same approval.
      const takeover = await run('once', key, 500).result;
      expect(takeover).toMatchObject({
        outcome: 'approved',
        attempt: held!.attempt + 1,
        value: { refunded: ran },
      });
      // The handler started twice (the killed attempt and the takeover) and completed once, with what was approved.
      const seen = await effects(key);
      expect(seen.filter((e) => e.phase === 'done')).toEqual([
        { attempt: held!.attempt + 1, phase: 'done', cents: ran },
      ]);
      expect(seen.filter((e) => e.phase === 'start').map((e) => e.attempt)).toEqual([
        held!.attempt,
        held!.attempt + 1,
      ]);
      expect(seen.every((e) => e.cents === ran)).toBe(true);
      const after = await row(key);
      expect(after?.status).toBe('succeeded');
      expect(after?.approval).toMatchObject({
        decision: 'approved',
        by: 'ops@acme',
        fingerprint: decision.fingerprint,
        approvedFingerprint: decision.approvedFingerprint,
      });

      // Every later call, from yet another process, replays the result: nothing runs again.
      expect(await run('once', key, 500).result).toMatchObject({
        outcome: 'replayed',
        value: takeover?.value,
      });
      expect(await effects(key)).toHaveLength(3);
    },
  );

  it('an approved job killed mid-run (kill -9) is resumed by a new process after its lease, once, still approved', async () => {
    const key = 'k-job-killed';
    expect(await run('job-once', key, 500).result).toMatchObject({ error: 'APPROVAL_REQUIRED' });
    expect(await effects(key)).toEqual([]);
    await decide(key, 'approve');

    // The approved job starts in a process that dies mid-run with its 1 s lease held.
    const victim = run('job-hang', key, 500);
    await victim.started;
    victim.child.kill('SIGKILL');
    expect(await victim.result).toBeUndefined();
    const held = await row(key);
    expect(held).toMatchObject({ status: 'in_progress', approval: { decision: 'approved' } });

    // A new process polls it as running (or abandoned) until the lease lapses, then resumes it under the same
    // approval; its ledger's close waits for the job to end. Bounded: at most 20 processes.
    let resumed: WorkerResult | undefined;
    for (let i = 0; i < 20 && resumed === undefined; i++) {
      const answer = await run('job-once', key, 500).result;
      if (answer?.outcome === 'approved') resumed = answer;
      else expect(answer).toMatchObject({ outcome: 'polled' });
    }
    expect(resumed).toMatchObject({ attempt: held!.attempt + 1, value: { status: 'running' } });
    const seen = await effects(key);
    expect(seen.filter((e) => e.phase === 'done')).toEqual([
      { attempt: held!.attempt + 1, phase: 'done', cents: 500 },
    ]);
    expect(seen.filter((e) => e.phase === 'start').map((e) => e.attempt)).toEqual([
      held!.attempt,
      held!.attempt + 1,
    ]);
    expect(await row(key)).toMatchObject({ status: 'succeeded', approval: { decision: 'approved' } });
    // Yet another process replays the finished job: nothing starts again.
    expect(await run('job-once', key, 500).result).toMatchObject({
      outcome: 'replayed',
      value: { jobId: resumed?.value?.jobId, status: 'succeeded' },
    });
    expect(await effects(key)).toHaveLength(3);
  });

  it('a decline is replayed by a process that never saw the key, and the handler never runs', async () => {
    const key = 'k-declined';
    expect(await run('once', key, 500).result).toMatchObject({ error: 'APPROVAL_REQUIRED' });
    await decide(key, 'decline');
    // Two fresh processes, one after the other: each reads the decline from the row alone.
    for (let i = 0; i < 2; i++) {
      const replay = await run('once', key, 500).result;
      expect(replay).toMatchObject({ error: 'APPROVAL_DECLINED' });
      expect(replay?.message).toContain('duplicate refund');
      expect(replay?.message).toContain('ops@acme');
    }
    expect(await effects(key)).toEqual([]);
    expect((await row(key))?.status).toBe('declined');
  });
});
