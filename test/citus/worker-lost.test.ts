import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type CitusCluster, citusInstall, startCitusCluster } from '../../scripts/citus/cluster.mjs';
import { createLedger, type Ledger, ToolLedgerError } from '../../src/index.js';
import { uniqueSchema } from '../support/db.js';
import { tenantsByWorker } from './support.js';

/**
 * A worker lost mid-load, on a Citus cluster of this test's own (it stops and restarts a worker, so never the
 * lane's). Tenants whose shards live on the other worker keep working; tenants on the lost one get a typed,
 * retryable error; once the worker is back, every key completes by retrying, and no handler ran twice.
 */
const TENANTS_PER_WORKER = 3;
/** Rounds of calls (one per tenant each) before the loss, during it, and after the return. */
const ROUNDS = { before: 3, during: 6, after: 3 } as const;
/** Retries of a failed key after the worker is back, each after a short pause: bounded in count and time. */
const RETRIES = 40;
const RETRY_PAUSE_MS = 250;

type Phase = 'before' | 'during' | 'after';
interface CallResult {
  readonly tenant: string;
  readonly key: string;
  readonly phase: Phase;
  readonly outcome?: string;
  readonly error?: { code: string; retryable: boolean; message: string };
}

let cluster: CitusCluster;
let ledger: Ledger;
let admin: pg.Pool;
const schema = uniqueSchema('citus_lost');
const runs = new Map<string, number>();
let liveTenants: string[] = [];
let lostTenants: string[] = [];

beforeAll(async () => {
  const install = citusInstall();
  if (install.skipped !== undefined) throw new Error(install.skipped);
  cluster = await startCitusCluster({ install, shardCount: 4 });
  admin = new pg.Pool({ connectionString: cluster.url, max: 2 });
  admin.on('error', () => {});
  ledger = await createLedger({
    connectionString: cluster.url,
    schema,
    distribute: true,
    telemetry: false,
    // A short lease, so a claim whose answer was lost with the worker is taken over soon after it returns.
    leaseSeconds: 1,
    waitSeconds: 0,
    connectTimeoutSeconds: 2,
    queryTimeoutSeconds: 10,
  });
  const byWorker = await tenantsByWorker(admin, schema, TENANTS_PER_WORKER);
  liveTenants = byWorker.get(cluster.workers[0]!.port)!;
  lostTenants = byWorker.get(cluster.workers[1]!.port)!;
}, 180_000);

afterAll(async () => {
  await ledger?.close({ timeoutSeconds: 1 });
  await admin?.end();
  await cluster?.destroy();
});

function charge() {
  return ledger.tool({
    name: 'charge',
    kind: 'mutation',
    input: z.object({ tenant: z.string(), key: z.string() }),
    handler: async (input) => {
      const id = `${input.tenant}/${input.key}`;
      runs.set(id, (runs.get(id) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { charged: id };
    },
  });
}

async function call(tool: ReturnType<typeof charge>, tenant: string, key: string, phase: Phase) {
  try {
    const result = await tool.invoke({ tenant, key }, { tenant, key });
    return { tenant, key, phase, outcome: result.outcome } satisfies CallResult;
  } catch (error) {
    if (!(error instanceof ToolLedgerError)) throw error;
    return {
      tenant,
      key,
      phase,
      error: { code: error.code, retryable: error.retryable, message: error.message },
    } satisfies CallResult;
  }
}

describe('a Citus worker lost mid-load', () => {
  it("keeps the live worker's tenants working, fails the lost one's retryably, and runs nothing twice once it is back", async () => {
    const tool = charge();
    const tenants = [...liveTenants, ...lostTenants];
    const results: CallResult[] = [];
    const round = async (phase: Phase, r: number) =>
      results.push(...(await Promise.all(tenants.map((t) => call(tool, t, `${phase}-${r}`, phase)))));

    for (let r = 0; r < ROUNDS.before; r++) await round('before', r);
    // Mid-load: the first round of the outage is under way when the worker goes.
    const inFlight = round('during', 0);
    await cluster.workers[1]!.node.stop('immediate');
    await inFlight;
    for (let r = 1; r < ROUNDS.during; r++) await round('during', r);
    const purgeDuringLoss = await ledger.purgeExpired().catch((error: unknown) => error);
    await cluster.workers[1]!.node.start();
    for (let r = 0; r < ROUNDS.after; r++) await round('after', r);

    // Before the loss every call ran; after the return, every call of a new key runs.
    for (const r of results.filter((x) => x.phase !== 'during'))
      expect(r).toMatchObject({ outcome: 'executed' });
    const during = results.filter((r) => r.phase === 'during' && r.key !== 'during-0');
    // The live worker's tenants kept working through the loss.
    for (const r of during.filter((x) => liveTenants.includes(x.tenant)))
      expect(r).toMatchObject({ outcome: 'executed' });
    // The lost worker's tenants got a typed, retryable error that says what happened.
    const lost = during.filter((x) => lostTenants.includes(x.tenant));
    expect(lost).toHaveLength(lostTenants.length * (ROUNDS.during - 1));
    for (const r of lost) {
      expect(r.error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
      expect(r.error?.message).toMatch(/Citus|worker|remote node/i);
    }
    // The round in flight when the worker went: the live tenants' calls ran; the lost ones' ran or failed retryably.
    for (const r of results.filter((x) => x.key === 'during-0')) {
      if (liveTenants.includes(r.tenant)) expect(r).toMatchObject({ outcome: 'executed' });
      else if (r.error) expect(r.error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
    }
    // A purge cannot reach the lost worker's shards either, and says so, retryably.
    expect(purgeDuringLoss).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });

    // The worker is back: every key that failed completes by retrying it, and replays agree with the first run.
    for (const failed of results.filter((r) => r.error)) {
      let last: CallResult | undefined;
      for (let i = 0; i < RETRIES; i++) {
        last = await call(tool, failed.tenant, failed.key, 'after');
        if (last.outcome) break;
        // Only a lease still held by a claim whose answer was lost: it lapses within leaseSeconds.
        expect(last.error).toMatchObject({ retryable: true });
        await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
      }
      expect(last?.outcome).toMatch(/^(executed|replayed)$/);
    }
    // Nothing ran twice: one run per key at most, and every key's row holds that run's result.
    for (const [id, count] of runs) expect(count, id).toBe(1);
    const { rows } = await admin.query<{ tenant_id: string; idempotency_key: string; status: string }>(
      `SELECT tenant_id, idempotency_key, status FROM "${schema}".tool_runs`,
    );
    expect(rows).toHaveLength(results.length);
    expect(rows.every((row) => row.status === 'succeeded')).toBe(true);
    expect(runs.size).toBe(results.length);
    const purged = await ledger.purgeExpired();
    expect(purged).toBe(0);
  }, 180_000);
});
