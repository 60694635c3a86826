import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createLedger } from '../../../src/index.js';
import { type FaultRow, worstCaseSeconds } from './load.js';
import type { FaultServer } from './postgres-server.js';

const WORKER = join(import.meta.dirname, '..', 'fixtures', 'fault-worker.ts');
const KEYS = 40;

interface Line {
  readonly key: string;
  readonly execId?: string;
  readonly code?: string;
  readonly typed?: boolean;
  readonly ms: number;
}

function worker(url: string, schema: string, order: 'forward' | 'reverse') {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, url, schema, String(KEYS), order], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Line[] = [];
  let buffer = '';
  let done = false;
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      if (line === 'DONE') done = true;
      else if (line.startsWith('{')) lines.push(JSON.parse(line) as Line);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child: child as ChildProcess, lines, exited, isDone: () => done, stderr: () => stderr };
}

/** Two workers share the keys; one is killed with SIGKILL mid-run, and a replacement finishes its work. */
export async function runKillWorker(server: FaultServer): Promise<FaultRow> {
  const schema = `faults_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  // Migrate once here, so the workers start without racing on it.
  const setup = await createLedger({ connectionString: server.url, schema, telemetry: false });
  await setup.close();
  await server.sql(`CREATE TABLE "${schema}".effects (key text NOT NULL, exec_id text NOT NULL)`);

  const victim = worker(server.url, schema, 'forward');
  const survivor = worker(server.url, schema, 'reverse');
  for (let i = 0; i < 400 && victim.lines.length < 5; i++) await new Promise((r) => setTimeout(r, 25));
  victim.child.kill('SIGKILL');
  const killedAt = Date.now();
  await victim.exited;
  const replacement = worker(server.url, schema, 'forward');
  const timeout = setTimeout(() => {
    survivor.child.kill('SIGKILL');
    replacement.child.kill('SIGKILL');
  }, 60_000);
  const [survivorCode, replacementCode] = await Promise.all([survivor.exited, replacement.exited]);
  clearTimeout(timeout);

  const effects = await server.sql<{ key: string; exec_id: string }>(
    `SELECT key, exec_id FROM "${schema}".effects`,
  );
  const rows = await server.sql<{ idempotency_key: string; status: string; exec: string }>(
    `SELECT idempotency_key, status, result_json->>'execId' AS exec FROM "${schema}".tool_runs`,
  );
  const stored = new Map(rows.map((r) => [r.idempotency_key, r]));
  const perKey = new Map<string, number>();
  for (const e of effects) perKey.set(e.key, (perKey.get(e.key) ?? 0) + 1);
  const effectIds = new Set(effects.map((e) => e.exec_id));

  const boundSeconds = worstCaseSeconds({
    waitSeconds: 1,
    connectTimeoutSeconds: 1,
    queryTimeoutSeconds: 2,
    handlerSeconds: 0.15,
  });
  const all = [...victim.lines, ...survivor.lines, ...replacement.lines];
  const finished = [...survivor.lines, ...replacement.lines].filter((l) => l.execId);
  let wrongSuccess = 0;
  for (const l of all.filter((x) => x.execId)) {
    const row = stored.get(l.key);
    if (row?.status !== 'succeeded' || row.exec !== l.execId || !effectIds.has(l.execId!)) wrongSuccess++;
  }
  const answered = new Set(finished.map((l) => l.key));
  let executions = 0;
  let duplicates = 0;
  for (const n of perKey.values()) {
    executions += n;
    duplicates += Math.max(0, n - 1);
  }
  await server.sql(`DROP SCHEMA "${schema}" CASCADE`).catch(() => {});
  const crashed = [survivorCode, replacementCode].filter((c) => c !== 0).length;
  return {
    scenario: 'kill -9 of a worker',
    keys: KEYS,
    calls: all.length,
    executions,
    duplicates,
    unsettled: all.filter((l) => l.ms > (boundSeconds + 2) * 1000).length,
    untyped: all.filter((l) => l.typed === false).length,
    crashes: crashed + (survivor.isDone() && replacement.isDone() ? 0 : crashed === 0 ? 1 : 0),
    wrongSuccess,
    unfinished: KEYS - answered.size,
    // Until every key is answered: the killed worker's keys wait out its lease (1.5 s) first.
    recoverySeconds: (Date.now() - killedAt) / 1000,
    boundSeconds,
    notes: Object.fromEntries(
      all
        .filter((l) => l.code)
        .reduce((m, l) => m.set(l.code!, (m.get(l.code!) ?? 0) + 1), new Map<string, number>()),
    ),
  };
}
