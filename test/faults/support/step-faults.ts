import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createLedger, type LedgerOptions } from '../../../src/index.js';
import { type FaultRow, worstCaseSeconds } from './load.js';
import type { FaultServer } from './postgres-server.js';
import { type Provider, type ProviderEffect, startProvider } from './provider.js';
import type { FaultProxy } from './proxy.js';
import type { AnswerLine, StepWorkerConfig, WorkerLine } from './step-protocol.js';

/** The ledger's record of a run's steps (`tool_runs.steps`), as far as these checks read it. */
type StepRecords = Readonly<Record<string, { status: string; attempt: number; result?: string | null }>>;

const WORKER = join(import.meta.dirname, '..', 'fixtures', 'step-worker.ts');
const STEPS = ['charge', 'email', 'ticket'] as const;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fault row of a step scenario, with what the vitest suite asserts key by key. */
export interface StepRow extends FaultRow {
  readonly wrongAnswers: number;
  /** One sentence per broken promise, naming the key: the assertion message. */
  readonly problems: readonly string[];
  /** Final answers per key (`ok` or the error code), for the suite's per-phase expectations. */
  readonly answers: Readonly<Record<string, readonly string[]>>;
  /** Effects per key and step at the provider. */
  readonly effects: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Provider requests per key and step (a replayed step sends none; a rerun one sends another). */
  readonly requests: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** The ledger row's status per key. */
  readonly statuses: Readonly<Record<string, string>>;
}

interface TimedLine {
  readonly at: number;
  readonly line: WorkerLine;
}

interface StepWorker {
  readonly child: ChildProcess;
  readonly lines: TimedLine[];
  readonly exited: Promise<number | null>;
  isDone(): boolean;
  stderr(): string;
  /** Tells a `waitForGo` worker to start. */
  go(): void;
  /** Resolves when `predicate` holds for the lines so far (false after `timeoutMs`, or when the worker exited). */
  waitFor(predicate: (lines: readonly TimedLine[]) => boolean, timeoutMs: number): Promise<boolean>;
}

function startWorker(config: StepWorkerConfig): StepWorker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(config)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: TimedLine[] = [];
  let buffer = '';
  let done = false;
  let stderr = '';
  let exitCode: number | null | undefined;
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const text = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      if (text === 'DONE') done = true;
      else if (text.startsWith('{')) lines.push({ at: Date.now(), line: JSON.parse(text) as WorkerLine });
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    // Bounded: a worker spewing warnings must not grow the test's memory.
    if (stderr.length < 20_000) stderr += chunk.toString();
  });
  // A killed worker's stdin closes under us; that is expected.
  child.stdin!.on('error', () => {});
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      resolve(code);
    }),
  );
  return {
    child,
    lines,
    exited,
    isDone: () => done,
    stderr: () => stderr,
    go: () => {
      child.stdin!.write('go\n');
    },
    async waitFor(predicate, timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        if (predicate(lines)) return true;
        if (exitCode !== undefined) return predicate(lines);
        await sleep(50);
      }
      return predicate(lines);
    },
  };
}

/** Waits for a worker to exit, killing it after `timeoutMs`. */
async function finish(worker: StepWorker, timeoutMs: number): Promise<number | null> {
  const timer = setTimeout(() => worker.child.kill('SIGKILL'), timeoutMs);
  const code = await worker.exited;
  clearTimeout(timer);
  return code;
}

async function freshSchema(server: FaultServer): Promise<string> {
  const schema = `steps_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  // Migrated once here, so the workers start without racing on it (they run with migrate: false).
  const setup = await createLedger({ connectionString: server.url, schema, telemetry: false });
  await setup.close();
  return schema;
}

/** What a key's final answers may be. */
type Expectation =
  /** Only successes. */
  | 'success'
  /** Only OUTCOME_UNKNOWN: a non-repeatable step without a lookup was interrupted. */
  | 'unknown'
  /** Either, or another typed final error; OUTCOME_UNKNOWN only when `unknownAllowed` says so. */
  | 'any';

interface JudgeInput {
  readonly scenario: string;
  readonly keys: readonly { tenant: string; key: string; expect: Expectation }[];
  readonly workers: readonly { worker: StepWorker; code: number | null; killed: boolean }[];
  readonly provider: Provider;
  readonly server: FaultServer;
  readonly schema: string;
  readonly options: LedgerOptions;
  /** For `any` keys: whether an unknown outcome is possible (a step that cannot be repeated may have started). */
  readonly unknownAllowed: (facts: {
    effects: Readonly<Record<string, number>>;
    steps: StepRecords;
  }) => boolean;
  readonly healedAt: number;
  readonly notes: Record<string, number>;
}

const id = (tenant: string, key: string) => `${tenant}/${key}`;

async function judge(input: JudgeInput): Promise<StepRow> {
  const { provider, options, notes } = input;
  const problems: string[] = [];
  const note = (name: string, by = 1) => {
    notes[name] = (notes[name] ?? 0) + by;
  };
  const providerMs = provider.delayMs;
  const C = options.connectTimeoutSeconds ?? 5;
  const Q = options.queryTimeoutSeconds ?? 10;
  // The handler's own time: three provider calls, and each step's save, a ledger statement (C + Q at worst).
  const boundSeconds = worstCaseSeconds({
    waitSeconds: options.waitSeconds ?? 10,
    connectTimeoutSeconds: C,
    queryTimeoutSeconds: Q,
    handlerSeconds: (3 * providerMs) / 1000 + 3 * (C + Q),
  });
  // Reported, never asserted (a shared two-core machine): slack for scheduling the formula does not describe.
  const boundMs = (boundSeconds + 5) * 1000;

  const effectsBy = new Map<string, ProviderEffect[]>();
  for (const e of provider.effects) {
    const k = `${id(e.tenant, e.ledgerKey)}/${e.step}`;
    effectsBy.set(k, [...(effectsBy.get(k) ?? []), e]);
  }
  const rows = await input.server.sql<{
    tenant_id: string;
    idempotency_key: string;
    status: string;
    attempt: number;
    result_json: Record<string, string> | null;
    steps: StepRecords | null;
  }>(
    `SELECT tenant_id, idempotency_key, status, attempt, result_json, steps
     FROM "${input.schema}".tool_runs WHERE tool_name = 'checkout'`,
  );
  // Evidence the fault bit: runs a later attempt took over, and steps a later attempt recorded.
  for (const r of rows) {
    if (r.attempt > 1) note('ledger: runs with attempt > 1');
    if (Object.values(r.steps ?? {}).some((st) => st.attempt > 1))
      note('ledger: runs with steps of attempt > 1');
  }
  const rowBy = new Map(rows.map((r) => [id(r.tenant_id, r.idempotency_key), r]));

  let wrongAnswers = 0;
  const lines = input.workers.flatMap((w) => w.worker.lines);
  // Which processes acted on each key, and in which the email step's function began and resolved.
  const acts = new Map<string, { actors: Set<number>; emailRan: Set<number>; emailDone: Set<number> }>();
  // Issue 22's first promise, read from each process's own order of events: once its handler has returned for a
  // key (a finished result in hand), that process never starts the key's handler again.
  const finishedIn = new Set<string>();
  input.workers.forEach(({ worker }, n) => {
    for (const { line } of worker.lines) {
      if (line.type === 'handler') {
        const k = `${n}/${id(line.tenant, line.key)}`;
        if (line.event === 'end') finishedIn.add(k);
        else if (finishedIn.has(k)) {
          wrongAnswers++;
          problems.push(
            `${id(line.tenant, line.key)}: its handler started again (attempt ${line.attempt}) in a process that had already finished it`,
          );
        }
      }
      if (!('key' in line)) continue;
      const k = id(line.tenant, line.key);
      const act = acts.get(k) ?? { actors: new Set(), emailRan: new Set(), emailDone: new Set() };
      acts.set(k, act);
      act.actors.add(n);
      if (line.type === 'step' && line.step === 'email')
        (line.event === 'ran' ? act.emailRan : act.emailDone).add(n);
    }
  });
  const answersBy = new Map<string, AnswerLine[]>();
  let calls = 0;
  let unsettled = 0;
  let crashes = 0;
  let recoveryAt = Number.NaN;
  const firstStart = new Map<string, number>();
  for (const { at, line } of lines) {
    if (line.type === 'crash') {
      crashes++;
      problems.push(`a worker crashed: ${line.message.slice(0, 300)}`);
    }
    if (line.type === 'start' && !firstStart.has(id(line.tenant, line.key)))
      firstStart.set(id(line.tenant, line.key), at);
    if (line.type === 'retry') {
      calls++;
      note(`retry ${line.code}`);
      // Whose lease was lost (a step's save or the completion) says which attempt a takeover fenced out.
      if (line.code === 'LEASE_LOST') note(`retry LEASE_LOST: ${line.message.slice(0, 40)}`);
      if (line.ms > boundMs) unsettled++;
    }
    if (line.type === 'answer') {
      calls++;
      if (line.ms > boundMs) unsettled++;
      const k = id(line.tenant, line.key);
      answersBy.set(k, [...(answersBy.get(k) ?? []), line]);
      note(line.ok ? 'success' : line.code);
      const started = firstStart.get(k) ?? input.healedAt;
      if (line.ok && started >= input.healedAt && !(at - input.healedAt > recoveryAt))
        recoveryAt = at - input.healedAt;
    }
  }
  for (const { worker, code, killed } of input.workers) {
    if (killed) continue;
    if (code !== 0 || !worker.isDone()) {
      crashes++;
      problems.push(
        `a worker exited with ${code} (done: ${worker.isDone()}): ${worker.stderr().slice(-500)}`,
      );
    }
  }

  let executions = 0;
  let duplicates = 0;
  let untyped = 0;
  let wrongSuccess = 0;
  let unfinished = 0;
  const answers: Record<string, string[]> = {};
  const effects: Record<string, Record<string, number>> = {};
  const requests: Record<string, Record<string, number>> = {};
  const statuses: Record<string, string> = {};
  for (const { tenant, key, expect } of input.keys) {
    const k = id(tenant, key);
    const perStep: Record<string, number> = {};
    for (const step of STEPS) {
      const n = effectsBy.get(`${k}/${step}`)?.length ?? 0;
      perStep[step] = n;
      executions += n;
      if (n > 1) {
        duplicates += n - 1;
        problems.push(`${k}: ${n} ${step} effects at the provider`);
      }
    }
    effects[k] = perStep;
    requests[k] = Object.fromEntries(STEPS.map((s) => [s, provider.requestsByStep.get(`${k}/${s}`) ?? 0]));
    const row = rowBy.get(k);
    statuses[k] = row?.status ?? 'none';
    const mine = answersBy.get(k) ?? [];
    answers[k] = mine.map((a) => (a.ok ? 'ok' : a.code));
    if (mine.length === 0) {
      unfinished++;
      problems.push(`${k}: no caller got an answer`);
    }
    for (const a of mine) {
      if (a.ok) {
        // A success stands for all three effects, the ones the ledger stored, and the ones the caller was told.
        for (const step of STEPS) {
          const made = effectsBy.get(`${k}/${step}`) ?? [];
          if (made.length === 0 || !made.some((e) => e.id === a.value[step])) {
            wrongSuccess++;
            problems.push(
              `${k}: a success names ${step} ${a.value[step]}, the provider made ${made.map((e) => e.id)}`,
            );
          }
          const record = row?.steps?.[step];
          if (record?.status !== 'succeeded' || !record.result?.includes(`"${a.value[step]}"`)) {
            wrongSuccess++;
            problems.push(`${k}: a success's ${step} step is recorded ${record?.status}: ${record?.result}`);
          }
          if (row?.status !== 'succeeded' || row.result_json?.[step] !== a.value[step]) {
            wrongSuccess++;
            problems.push(`${k}: a success's ${step} is not what the ledger stored (${row?.status})`);
          }
        }
        if (expect === 'unknown') {
          wrongAnswers++;
          problems.push(`${k}: succeeded, though a step that cannot be repeated was interrupted`);
        }
        continue;
      }
      if (!a.typed) {
        untyped++;
        problems.push(`${k}: an untyped error: ${a.message}`);
        continue;
      }
      if (a.code === 'UNFINISHED') {
        unfinished++;
        problems.push(`${k}: a caller still had only retryable errors at its deadline`);
        continue;
      }
      if (a.code === 'OUTCOME_UNKNOWN') {
        const steps = row?.steps ?? {};
        const allowed =
          expect === 'unknown' || (expect === 'any' && input.unknownAllowed({ effects: perStep, steps }));
        if (!allowed) {
          wrongAnswers++;
          problems.push(`${k}: OUTCOME_UNKNOWN, though no step that cannot be repeated was interrupted`);
        }
        if (row?.status !== 'unknown') {
          wrongAnswers++;
          problems.push(`${k}: OUTCOME_UNKNOWN, and the ledger row is ${row?.status}, not unknown`);
        }
        continue;
      }
      note(`final: ${a.code}: ${a.message.slice(0, 80)}`);
      if (expect !== 'any') {
        wrongAnswers++;
        problems.push(`${k}: ${a.code} (${a.message.slice(0, 120)}), expected ${expect}`);
      }
    }
    if (mine.some((a) => !a.ok && a.code === 'OUTCOME_UNKNOWN')) {
      // What the processes knew of the email step, the only one that can end unknown.
      const act = acts.get(k);
      const done = act?.emailDone.size ?? 0;
      note(
        done > 0
          ? 'unknown: email step finished in a process'
          : (act?.emailRan.size ?? 0) > 0
            ? 'unknown: email step ran, never finished'
            : 'unknown: email step never ran',
      );
      // One process did everything for this key and finished the email step itself: it held that result, so a
      // retry or takeover in it must save it, not declare it unknown (issue 22's never-rerun, for steps).
      if (act?.actors.size === 1 && done > 0) {
        wrongAnswers++;
        problems.push(
          `${k}: OUTCOME_UNKNOWN, though the one process calling it finished the email step itself`,
        );
      }
    }
    if (expect === 'unknown' && mine.length > 0 && statuses[k] !== 'unknown') {
      problems.push(`${k}: the row is ${statuses[k]}, expected unknown`);
    }
    // An unknown outcome is the interrupted email step's: recorded as started, with the ticket never begun.
    if (expect === 'unknown' && (row?.steps?.email?.status !== 'started' || row.steps.ticket)) {
      wrongAnswers++;
      problems.push(
        `${k}: steps recorded ${JSON.stringify(row?.steps)}, expected the email step started only`,
      );
    }
  }
  if (provider.badKeys.length > 0) {
    wrongAnswers += provider.badKeys.length;
    problems.push(`step keys providers refuse: ${provider.badKeys.slice(0, 3).join(', ')}`);
  }
  // Step keys: stable across attempts and distinct per tenant, key and step. A provider key shared by two
  // (tenant, key, step) would let a deduping provider hand one tenant's charge to another.
  const owners = new Map<string, string>();
  for (const e of provider.effects) {
    const owner = `${id(e.tenant, e.ledgerKey)}/${e.step}`;
    const seen = owners.get(e.stepKey);
    if (seen && seen !== owner) {
      wrongAnswers++;
      problems.push(`step key ${e.stepKey} used by ${seen} and ${owner}`);
    }
    owners.set(e.stepKey, owner);
  }

  return {
    scenario: input.scenario,
    keys: input.keys.length,
    calls,
    executions,
    duplicates,
    unsettled,
    untyped,
    crashes,
    wrongSuccess,
    unfinished,
    recoverySeconds: recoveryAt / 1000,
    boundSeconds,
    notes,
    wrongAnswers,
    problems,
    answers,
    effects,
    requests,
    statuses,
  };
}

/**
 * The phases a victim is killed at, and what the retry must end with. The charge is repeatable (deduped by its
 * key), the email is not and has no lookup (so `fail`), the ticket is not but has a lookup.
 */
export const KILL_PHASES = [
  ['charge:before', 'success'],
  ['charge:call', 'success'],
  ['charge:answered', 'success'],
  ['between:charge-email', 'success'],
  ['email:before', 'unknown'],
  ['email:call', 'unknown'],
  ['email:answered', 'unknown'],
  ['between:email-ticket', 'success'],
  ['ticket:before', 'success'],
  ['ticket:call', 'success'],
  ['ticket:answered', 'success'],
  ['after:ticket', 'success'],
] as const;

/** Two tenants with the same raw keys: the step keys must still differ. */
const TENANTS = ['acme', 'globex'];

const KILL_OPTIONS = {
  leaseSeconds: 2,
  waitSeconds: 1,
  connectTimeoutSeconds: 1,
  queryTimeoutSeconds: 2,
  statementTimeoutSeconds: 1,
} as const satisfies LedgerOptions;

/**
 * kill -9 at every phase of a three-step handler. One victim process runs every key, each stopping at its
 * phase (inside a step before the provider call, during it, after the answer but before the step's save, between
 * steps, after the last step); once all have stopped it is killed, and another process retries every key, two
 * callers each, which wait out the lease (2 s) and take over.
 */
export async function runStepKills(server: FaultServer): Promise<StepRow> {
  const scenario = 'kill -9 inside steps';
  const schema = await freshSchema(server);
  const provider = await startProvider();
  provider.delayMs = 50;
  const notes: Record<string, number> = {};
  const keys = KILL_PHASES.flatMap(([phase, expect]) =>
    TENANTS.map((tenant) => ({ tenant, key: `k-${phase.replace(':', '-')}`, hold: phase, expect })),
  );
  const base = {
    url: server.url,
    schema,
    provider: provider.url,
    options: KILL_OPTIONS,
    deadlineSeconds: 60,
  };
  const workers: { worker: StepWorker; code: number | null; killed: boolean }[] = [];
  try {
    const victim = startWorker({
      ...base,
      role: 'victim',
      keys: keys.map(({ tenant, key, hold }) => ({ tenant, key, hold })),
    });
    const holds = (lines: readonly TimedLine[]) =>
      lines.filter((l) => l.line.type === 'hold').length + provider.held.length;
    const allHeld = await victim.waitFor((lines) => holds(lines) >= keys.length, 60_000);
    if (!allHeld) notes['victim: keys not at their phase when killed'] = keys.length - holds(victim.lines);
    // Anything the victim answered before the kill is a call that ignored its hold: counted, not expected.
    victim.child.kill('SIGKILL');
    const killedAt = Date.now();
    workers.push({ worker: victim, code: await victim.exited, killed: true });
    const retrier = startWorker({
      ...base,
      role: 'callers',
      keys: keys.map(({ tenant, key, hold }) => ({ tenant, key, hold })),
      lanes: keys.length * 2,
      callersPerKey: 2,
    });
    workers.push({ worker: retrier, code: await finish(retrier, 90_000), killed: false });
    const row = await judge({
      scenario,
      keys,
      workers,
      provider,
      server,
      schema,
      options: KILL_OPTIONS,
      unknownAllowed: () => false,
      healedAt: killedAt,
      notes,
    });
    // Recovery here: from the kill until the last key had its answer (the keys first wait out the lease).
    const last = Math.max(
      ...workers[1]!.worker.lines.filter((l) => l.line.type === 'answer').map((l) => l.at),
    );
    return { ...row, recoverySeconds: (last - killedAt) / 1000 };
  } finally {
    for (const { worker } of workers) worker.child.kill('SIGKILL');
    await provider.close();
    await server.sql(`DROP SCHEMA "${schema}" CASCADE`).catch(() => {});
  }
}

export interface DeadNetworkPlan {
  readonly name: string;
  /** One process with 16 callers, or two with 8 each. */
  readonly processes: 1 | 2;
  readonly leaseSeconds: number;
  readonly queryTimeoutSeconds: number;
  /** How long connections open at the fault stay silently dead; new connections work again after it. */
  readonly faultSeconds: number;
}

/**
 * A silently dead network longer than the lease (and than queryTimeoutSeconds): 16 callers, 3 per key (3 per key
 * in each process, with two), run the three-step tool through the proxy while it black-holes every connection
 * that carries a byte during the fault. Completions and step saves hang until queryTimeoutSeconds, leases lapse,
 * and retries in the same process (or the other one) try to take over keys whose handler already acted.
 */
export async function runDeadNetwork(
  server: FaultServer,
  proxy: FaultProxy,
  plan: DeadNetworkPlan,
): Promise<StepRow> {
  const scenario = plan.name;
  const schema = await freshSchema(server);
  const provider = await startProvider();
  // Each step takes a while, so the fault lands inside steps, between them and in completions.
  provider.delayMs = 150;
  const notes: Record<string, number> = {};
  const options = {
    leaseSeconds: plan.leaseSeconds,
    waitSeconds: 1,
    connectTimeoutSeconds: 1,
    queryTimeoutSeconds: plan.queryTimeoutSeconds,
    statementTimeoutSeconds: 1,
  } as const satisfies LedgerOptions;
  // More keys than the load reaches: callers stop picking new ones after loadSeconds.
  const all = Array.from({ length: 200 }, (_, i) => ({ tenant: TENANTS[i % 2]!, key: `n${i}` }));
  const workers: { worker: StepWorker; code: number | null; killed: boolean }[] = [];
  const started: StepWorker[] = [];
  try {
    for (let p = 0; p < plan.processes; p++) {
      started.push(
        startWorker({
          url: proxy.url(),
          schema,
          provider: provider.url,
          options,
          role: 'callers',
          keys: all,
          lanes: 16 / plan.processes,
          callersPerKey: 3,
          loadSeconds: plan.faultSeconds + 6,
          deadlineSeconds: 90,
          waitForGo: true,
        }),
      );
    }
    for (const w of started) {
      if (!(await w.waitFor((lines) => lines.some((l) => l.line.type === 'ready'), 60_000)))
        notes['worker not ready in 60 s'] = (notes['worker not ready in 60 s'] ?? 0) + 1;
    }
    for (const w of started) w.go();
    await sleep(2000);
    proxy.mode = 'blackhole';
    let healedAt: number;
    try {
      await sleep(plan.faultSeconds * 1000);
    } finally {
      proxy.mode = 'pass';
      healedAt = Date.now();
    }
    for (const w of started) workers.push({ worker: w, code: await finish(w, 120_000), killed: false });
    const reached = new Set<string>();
    for (const w of started)
      for (const { line } of w.lines) if (line.type === 'start') reached.add(id(line.tenant, line.key));
    const keys = all
      .filter((k) => reached.has(id(k.tenant, k.key)))
      .map((k) => ({ ...k, expect: 'any' as const }));
    return await judge({
      scenario,
      keys,
      workers,
      provider,
      server,
      schema,
      options,
      // Only the email step may be unknown (the charge reruns, the ticket has a lookup): it must have started, after
      // the charge was made, and have no recorded result.
      unknownAllowed: ({ effects, steps }) => (effects.charge ?? 0) > 0 && steps.email?.status === 'started',
      healedAt,
      notes,
    });
  } finally {
    proxy.mode = 'pass';
    for (const w of started) w.child.kill('SIGKILL');
    await provider.close();
    await server.sql(`DROP SCHEMA "${schema}" CASCADE`).catch(() => {});
  }
}
