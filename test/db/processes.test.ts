import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { databaseUrl, postgresBackend } from '../support/db.js';

const root = join(import.meta.dirname, '../..');
const worker = join(root, 'test/fixtures/ledger-worker.mjs');

interface WorkerResult {
  outcome?: string;
  value?: { chargedBy: number };
  attempt?: number;
  error?: string;
}

function start(args: string[]): { child: ChildProcess; output: Promise<string>; started: Promise<void> } {
  const child = spawn(process.execPath, [worker, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let onStarted: () => void;
  const started = new Promise<void>((resolve) => {
    onStarted = resolve;
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    if (out.includes('STARTED')) onStarted();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const output = new Promise<string>((resolve, reject) => {
    child.on('exit', (code, signal) => {
      if (code === 0 || signal === 'SIGKILL') resolve(out);
      else reject(new Error(`worker exited with ${code}: ${err}`));
    });
  });
  return { child, output, started };
}

function lastJson(output: string): WorkerResult[] {
  const line = output.trim().split('\n').at(-1) ?? '[]';
  return JSON.parse(line) as WorkerResult[];
}

describe('across processes on real Postgres', () => {
  const backend = postgresBackend();
  let schema: string;

  beforeAll(async () => {
    if (!existsSync(join(root, 'dist/index.js'))) execFileSync('npm', ['run', 'build'], { cwd: root });
    const ledger = await backend.open();
    schema = ledger.schema;
    await backend.sql(`CREATE TABLE "${schema}".side_effects (pid integer, attempt integer)`);
  });

  const sideEffects = () =>
    backend.sql<{ pid: number; attempt: number }>(`SELECT pid, attempt FROM "${schema}".side_effects`);

  it('runs 50 parallel same-key calls from 5 processes exactly once', async () => {
    await backend.sql(`TRUNCATE "${schema}".side_effects`);
    const workers = Array.from({ length: 5 }, () =>
      start(['parallel', databaseUrl(), schema, 'k-fifty', '10']),
    );
    const results = (await Promise.all(workers.map((w) => w.output))).flatMap(lastJson);
    expect(results).toHaveLength(50);
    expect(results.filter((r) => r.error)).toEqual([]);
    expect(results.filter((r) => r.outcome === 'executed')).toHaveLength(1);
    expect(results.filter((r) => r.outcome === 'replayed')).toHaveLength(49);
    expect(new Set(results.map((r) => r.value?.chargedBy)).size).toBe(1);
    expect(await sideEffects()).toHaveLength(1);
  });

  it('takes over after a kill -9 once the lease lapses', async () => {
    await backend.sql(`TRUNCATE "${schema}".side_effects`);
    const victim = start(['hang', databaseUrl(), schema, 'k-killed']);
    await victim.started;
    victim.child.kill('SIGKILL');
    await victim.output;
    const [held] = await backend.sql<{ status: string; attempt: number }>(
      `SELECT status, attempt FROM "${schema}".tool_runs WHERE idempotency_key = 'k-killed'`,
    );
    expect(held).toEqual({ status: 'in_progress', attempt: 1 });
    // The next caller waits on the dead owner's 1 s lease, then takes over when it lapses.
    const [after] = lastJson(await start(['once', databaseUrl(), schema, 'k-killed']).output);
    expect(after).toMatchObject({ outcome: 'executed', attempt: 2 });
    expect((await sideEffects()).map((s) => s.attempt).sort()).toEqual([1, 2]);
  });

  it('refuses the completion of an owner that stalled past its lease', async () => {
    await backend.sql(`TRUNCATE "${schema}".side_effects`);
    const stalled = start(['stall', databaseUrl(), schema, 'k-stalled', '6000']);
    await stalled.started;
    // The stalled owner's 0.5 s lease lapses; with a frozen event loop it cannot renew. Take over from this
    // process as soon as the database says so, well inside the 6 s stall even on a loaded machine.
    await expect
      .poll(
        async () =>
          (
            await backend.sql<{ lapsed: boolean }>(
              `SELECT lease_expires_at < now() AS lapsed FROM "${schema}".tool_runs WHERE idempotency_key = 'k-stalled'`,
            )
          )[0]?.lapsed,
        { timeout: 5000, interval: 50 },
      )
      .toBe(true);
    const ledger = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
    const takeover = await ledger
      .tool({
        name: 'charge_card',
        kind: 'mutation',
        handler: () => ({ chargedBy: process.pid, amount: 4500 }),
      })
      .invoke({ amount: 4500 }, { key: 'k-stalled' });
    await ledger.close();
    expect(takeover).toMatchObject({ outcome: 'executed', attempt: 2, value: { chargedBy: process.pid } });
    const [late] = lastJson(await stalled.output);
    expect(late).toEqual({ error: 'LEASE_LOST' });
    const [row] = await backend.sql<{ attempt: number; result_json: { chargedBy: number } }>(
      `SELECT attempt, result_json FROM "${schema}".tool_runs WHERE idempotency_key = 'k-stalled'`,
    );
    expect(row).toEqual({ attempt: 2, result_json: { chargedBy: process.pid, amount: 4500 } });
  });
});
