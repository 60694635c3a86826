import { randomUUID } from 'node:crypto';
import { createLedger, type Ledger, type LedgerOptions, ToolLedgerError } from '../../../src/index.js';
import type { FaultServer } from './postgres-server.js';

/** One row of the fault report. */
export interface FaultRow {
  readonly scenario: string;
  readonly keys: number;
  readonly calls: number;
  /** Committed side-table rows (transactional tool) plus handler runs (plain tool), summed over keys. */
  readonly executions: number;
  /** Executions beyond the first, summed over keys. */
  readonly duplicates: number;
  /** Calls that had not settled within the stated bound. */
  readonly unsettled: number;
  /** Errors that were not `ToolLedgerError`s. */
  readonly untyped: number;
  /** Uncaught exceptions and unhandled rejections during the scenario (or workers that died on their own). */
  readonly crashes: number;
  /** Successes whose value is not what the ledger stored for the key. */
  readonly wrongSuccess: number;
  /** Keys that never got an answer they could stop on (success or a non-retryable error) before the deadline. */
  readonly unfinished: number;
  /** Seconds from the end of the fault to the first call that succeeded on a fresh key. */
  readonly recoverySeconds: number;
  /** The per-call bound the unsettled column counts against. */
  readonly boundSeconds: number;
  /**
   * Final answers other than the scenario allows (step scenarios): OUTCOME_UNKNOWN where no step that cannot be
   * repeated was interrupted, a success where one was, or step keys a provider refuses or two keys share.
   */
  readonly wrongAnswers?: number;
  /** Extra counts a scenario asserts on (error codes seen, handler starts). */
  readonly notes: Readonly<Record<string, number>>;
}

/** The options every scenario's ledger starts from: short timeouts keep the suite quick. */
export const FAULT_OPTIONS = {
  telemetry: false,
  poolSize: 4,
  connectTimeoutSeconds: 1,
  queryTimeoutSeconds: 2,
  statementTimeoutSeconds: 1,
  leaseSeconds: 6,
  waitSeconds: 1,
} as const satisfies LedgerOptions;

export const HANDLER_MS = 30;

/**
 * The worst-case time to an answer, as docs/ledger.md states it:
 * waitSeconds + 10 × (connectTimeoutSeconds + queryTimeoutSeconds) + handler time + 0.3 s.
 */
export function worstCaseSeconds(options: {
  waitSeconds: number;
  connectTimeoutSeconds: number;
  queryTimeoutSeconds: number;
  handlerSeconds: number;
}): number {
  return (
    options.waitSeconds +
    10 * (options.connectTimeoutSeconds + options.queryTimeoutSeconds) +
    options.handlerSeconds +
    0.3
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface LoadPlan {
  readonly name: string;
  readonly server: FaultServer;
  /** Where the ledger connects (the proxy, or the server directly). */
  readonly url: string;
  readonly options?: LedgerOptions;
  /** New keys started per second while the load runs. */
  readonly keysPerSecond?: number;
  /** Callers per key, racing each other. */
  readonly callersPerKey?: number;
  readonly loadSeconds?: number;
  readonly handlerMs?: number;
  /** Which keys use the transactional tool: every other one by default. */
  readonly transactional?: 'half' | 'all' | 'none';
  /** Runs the fault; resolves when it has been healed. */
  fault(context: { ledger: Ledger; schema: string }): Promise<void>;
  /** When the fault starts, in seconds after the load. */
  readonly faultAtSeconds?: number;
}

interface Success {
  readonly key: string;
  readonly execId: string;
}

export async function runLoad(plan: LoadPlan): Promise<FaultRow> {
  const options = { ...FAULT_OPTIONS, ...plan.options };
  const handlerMs = plan.handlerMs ?? HANDLER_MS;
  const boundSeconds = worstCaseSeconds({
    waitSeconds: options.waitSeconds,
    connectTimeoutSeconds: options.connectTimeoutSeconds,
    queryTimeoutSeconds: options.queryTimeoutSeconds,
    handlerSeconds: handlerMs / 1000,
  });
  // Two cores shared with other suites: scheduling adds delay the formula does not describe.
  const boundMs = (boundSeconds + 2) * 1000;
  const schema = `faults_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  await plan.server.sql(`CREATE SCHEMA "${schema}"`);
  await plan.server.sql(
    `CREATE TABLE "${schema}".effects (key text NOT NULL, exec_id text NOT NULL, at timestamptz DEFAULT now())`,
  );

  let crashes = 0;
  const onCrash = (error: unknown) => {
    // Counted as a crash, and printed: a crash under load is rare, and its stack is what tells the cause.
    console.error('fault scenario: uncaught in the process:', error);
    crashes++;
  };
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);

  const ledger = await createLedger({ connectionString: plan.url, schema, ...options });
  const plainRuns = new Map<string, number>();
  const notes: Record<string, number> = {};
  const note = (name: string) => {
    notes[name] = (notes[name] ?? 0) + 1;
  };
  const plain = ledger.tool({
    name: 'charge',
    kind: 'mutation',
    handler: async (_input: unknown, ctx) => {
      plainRuns.set(ctx.key!, (plainRuns.get(ctx.key!) ?? 0) + 1);
      note('handler_starts');
      await sleep(handlerMs);
      return { execId: randomUUID() };
    },
  });
  const transfer = ledger.tool({
    name: 'transfer',
    kind: 'mutation',
    transactional: true,
    handler: async (_input: unknown, ctx) => {
      note('handler_starts');
      const execId = randomUUID();
      await ctx.db!.query(`INSERT INTO "${schema}".effects (key, exec_id) VALUES ($1, $2)`, [
        ctx.key,
        execId,
      ]);
      await sleep(handlerMs);
      return { execId };
    },
  });
  const probe = ledger.tool({ name: 'probe', kind: 'mutation', handler: () => 'ok' });

  let calls = 0;
  let unsettled = 0;
  let untyped = 0;
  let unfinished = 0;
  const successes: Success[] = [];
  const deadline = Date.now() + 90_000;
  const transactionalFor = (i: number) =>
    plan.transactional === 'all' ? true : plan.transactional === 'none' ? false : i % 2 === 1;

  /** One caller's retry loop for one key: retries while the ledger says retryable, as a careful client does. */
  const drive = async (key: string, tx: boolean) => {
    const tool = tx ? transfer : plain;
    for (let attempt = 0; attempt < 400 && Date.now() < deadline; attempt++) {
      calls++;
      let timer: NodeJS.Timeout | undefined;
      const call = tool.call({ amount: 1 }, { key }).then(
        (value) => ({ kind: 'value' as const, value }),
        (error: unknown) => ({ kind: 'error' as const, error }),
      );
      const result = await Promise.race([
        call,
        new Promise<{ kind: 'unsettled' }>((resolve) => {
          timer = setTimeout(() => resolve({ kind: 'unsettled' }), boundMs);
        }),
      ]);
      clearTimeout(timer);
      if (result.kind === 'unsettled') {
        unsettled++;
        await call;
        continue;
      }
      if (result.kind === 'value') {
        successes.push({ key, execId: (result.value as { execId: string }).execId });
        return;
      }
      const error = result.error;
      if (!(error instanceof ToolLedgerError)) {
        untyped++;
        note(`untyped: ${error instanceof Error ? error.message.slice(0, 60) : String(error)}`);
        return;
      }
      note(error.code);
      if (!error.retryable) {
        note(`final: ${error.message.slice(0, 80)}`);
        return;
      }
      await sleep(Math.min(error.retryAfterMs ?? 100, 250));
    }
    unfinished++;
  };

  const keysPerSecond = plan.keysPerSecond ?? 40;
  const callersPerKey = plan.callersPerKey ?? 2;
  const loadMs = (plan.loadSeconds ?? 4) * 1000;
  const drivers: Promise<void>[] = [];
  const keys: { key: string; tx: boolean }[] = [];
  let faultDone: Promise<number> | undefined;
  const started = Date.now();
  const faultAt = started + (plan.faultAtSeconds ?? 1) * 1000;
  for (let i = 0; Date.now() - started < loadMs; i++) {
    if (!faultDone && Date.now() >= faultAt) {
      faultDone = plan.fault({ ledger, schema }).then(() => Date.now());
    }
    const key = `k${i}`;
    const tx = transactionalFor(i);
    keys.push({ key, tx });
    for (let c = 0; c < callersPerKey; c++) drivers.push(drive(key, tx));
    await sleep(1000 / keysPerSecond);
  }
  faultDone ??= plan.fault({ ledger, schema }).then(() => Date.now());
  const healedAt = await faultDone;

  // Recovery: how soon after the fault ends a brand-new key succeeds.
  let recoverySeconds = Number.NaN;
  for (let i = 0; Date.now() < deadline; i++) {
    try {
      await probe.call({}, { key: `probe-${i}` });
      recoverySeconds = (Date.now() - healedAt) / 1000;
      break;
    } catch (error) {
      if (!(error instanceof ToolLedgerError)) untyped++;
      await sleep(50);
    }
  }
  await Promise.all(drivers);

  // What the database holds decides whether a success was told wrongly.
  const rows = await plan.server.sql<{
    tool_name: string;
    idempotency_key: string;
    status: string;
    exec: string;
  }>(`SELECT tool_name, idempotency_key, status, result_json->>'execId' AS exec FROM "${schema}".tool_runs`);
  const stored = new Map(rows.map((r) => [`${r.tool_name}/${r.idempotency_key}`, r]));
  const effects = await plan.server.sql<{ key: string; exec_id: string }>(
    `SELECT key, exec_id FROM "${schema}".effects`,
  );
  const effectIds = new Set(effects.map((e) => e.exec_id));
  const committed = new Map<string, number>();
  for (const e of effects) committed.set(e.key, (committed.get(e.key) ?? 0) + 1);
  let wrongSuccess = 0;
  for (const s of successes) {
    const tx = keys.find((k) => k.key === s.key)?.tx ?? false;
    const row = stored.get(`${tx ? 'transfer' : 'charge'}/${s.key}`);
    if (row?.status !== 'succeeded' || row.exec !== s.execId) wrongSuccess++;
    else if (tx && !effectIds.has(s.execId)) wrongSuccess++;
  }
  let executions = 0;
  let duplicates = 0;
  for (const { key, tx } of keys) {
    const n = tx ? (committed.get(key) ?? 0) : (plainRuns.get(key) ?? 0);
    executions += n;
    duplicates += Math.max(0, n - 1);
  }

  await ledger.close({ timeoutSeconds: 2 });
  // Late errors from sockets closing still count: give them a moment to surface.
  await sleep(200);
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
  await plan.server.sql(`DROP SCHEMA "${schema}" CASCADE`).catch(() => {});
  return {
    scenario: plan.name,
    keys: keys.length,
    calls,
    executions,
    duplicates,
    unsettled,
    untyped,
    crashes,
    wrongSuccess,
    unfinished,
    recoverySeconds,
    boundSeconds,
    notes,
  };
}
