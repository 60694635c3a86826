import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultServer, startFaultServer } from './support/postgres-server.js';
import { startProvider } from './support/provider.js';
import { type FaultProxy, startProxy } from './support/proxy.js';
import { KILL_PHASES, runDeadNetwork, runStepKills, type StepRow } from './support/step-faults.js';
import { DEAD_NETWORK_PLANS } from './support/step-scenarios.js';

// Issue 22: side effects outside the database happen once, with recorded steps, under kill -9 at every phase of
// a three-step handler and under a silently dead network longer than the lease. A Postgres of this file's own
// (never the shared one), child processes for the callers, and a loopback provider that counts every effect.
let server: FaultServer;
let proxy: FaultProxy;
beforeAll(async () => {
  server = await startFaultServer();
  proxy = await startProxy(server.port);
});
afterAll(async () => {
  await proxy?.close();
  await server?.destroy();
});

/** The promises every step scenario keeps, asserted together so a failure shows every broken key at once. */
function expectKept(row: StepRow) {
  expect(row.keys).toBeGreaterThan(0);
  expect(row.problems, JSON.stringify(row.notes)).toEqual([]);
  expect(row).toMatchObject({
    duplicates: 0,
    untyped: 0,
    crashes: 0,
    wrongSuccess: 0,
    unfinished: 0,
    wrongAnswers: 0,
  });
}

describe('the loopback provider', () => {
  it('dedupes by Idempotency-Key on /dedupe, has an effect per /plain request, and finds effects by reference', async () => {
    const provider = await startProvider();
    try {
      const post = (path: string, headers: Record<string, string>, step = 'charge') =>
        fetch(`${provider.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ tenant: 't', ledgerKey: 'k', step }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { id?: string } }));
      const first = await post('/dedupe', { 'idempotency-key': 'a' });
      const again = await post('/dedupe', { 'idempotency-key': 'a' });
      expect(again).toEqual(first);
      await post('/plain', { 'x-ref': 'r' }, 'email');
      await post('/plain', { 'x-ref': 'r' }, 'email');
      expect(provider.effects.map((e) => `${e.endpoint}/${e.step}`)).toEqual([
        'dedupe/charge',
        'plain/email',
        'plain/email',
      ]);
      expect(provider.requestsByStep.get('t/k/charge')).toBe(2);
      expect((await fetch(`${provider.url}/lookup?ref=r`)).status).toBe(200);
      expect((await fetch(`${provider.url}/lookup?ref=nothing`)).status).toBe(404);
      expect((await post('/dedupe', { 'idempotency-key': 'not a key!' })).status).toBe(400);
      expect(provider.badKeys).toEqual(['not a key!']);
      // A held request has its effect at once and no answer: its caller is killed (here: aborts) in the call.
      const aborter = new AbortController();
      const held = fetch(`${provider.url}/plain`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-ref': 'h', 'x-hold': '1' },
        body: JSON.stringify({ tenant: 't', ledgerKey: 'k', step: 'ticket' }),
        signal: aborter.signal,
      }).then(
        () => 'answered',
        () => 'aborted',
      );
      expect(await provider.waitForHeld(1, 10_000)).toBe(true);
      expect(provider.effects.at(-1)?.step).toBe('ticket');
      aborter.abort();
      expect(await held).toBe('aborted');
    } finally {
      await provider.close();
    }
  });
});

describe('side effects exactly once (issue 22)', () => {
  it('kill -9 at every step phase: no effect twice, no success without its effects, OUTCOME_UNKNOWN exactly where the email step was interrupted', async () => {
    const row = await runStepKills(server);
    expectKept(row);
    for (const [phase, expected] of KILL_PHASES) {
      for (const tenant of ['acme', 'globex']) {
        const k = `${tenant}/k-${phase.replace(':', '-')}`;
        const answers = row.answers[k] ?? [];
        const at = `${k} (killed at ${phase})`;
        expect(answers.length, at).toBeGreaterThan(0);
        expect(new Set(answers), at).toEqual(new Set([expected === 'success' ? 'ok' : 'OUTCOME_UNKNOWN']));
        const effects = row.effects[k]!;
        const requests = row.requests[k]!;
        if (expected === 'unknown') {
          expect(row.statuses[k], at).toBe('unknown');
          // The email step was interrupted: not repeated, and the ticket never opened.
          expect(effects, at).toEqual({ charge: 1, email: phase === 'email:before' ? 0 : 1, ticket: 0 });
        } else {
          expect(row.statuses[k], at).toBe('succeeded');
          expect(effects, at).toEqual({ charge: 1, email: 1, ticket: 1 });
        }
        // A step that had finished is replayed from the ledger: no second request for it.
        const chargeDone = !phase.startsWith('charge:');
        if (chargeDone) expect(requests.charge, `${at}: charge requests`).toBe(1);
        if (phase === 'between:email-ticket' || phase.startsWith('ticket:') || phase === 'after:ticket')
          expect(requests.email, `${at}: email requests`).toBe(1);
        // The ticket's lookup settles an interrupted ticket without a second request when it had happened.
        if (phase.startsWith('ticket:') || phase === 'after:ticket')
          expect(requests.ticket, `${at}: ticket requests`).toBe(1);
      }
    }
  }, 240_000);

  it.each(DEAD_NETWORK_PLANS.map((p) => [p.name, p] as const))(
    '%s: a silently dead network longer than the lease, 16 callers, 3 per key: no effect twice, every caller answered',
    async (_name, plan) => {
      const row = await runDeadNetwork(server, proxy, plan);
      expectKept(row);
      // Not vacuous: the fault reached calls (they saw retryable errors), and keys finished after it.
      expect(
        Object.keys(row.notes).some((n) => n.startsWith('retry ')),
        JSON.stringify(row.notes),
      ).toBe(true);
      expect(row.notes.success ?? 0).toBeGreaterThan(0);
    },
    240_000,
  );
});
