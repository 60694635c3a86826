import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApprovalRule, Ledger } from '../../src/index.js';
import { layouts } from '../support/db.js';
import { rejection } from '../support/rejection.js';

// Approvals (docs/ledger.md, "Approvals") on real Postgres and the embedded PGlite: every state of a key needing
// approval, met by the same arguments, other arguments and another user; decisions, races, edits and waits.

const refund = z.object({ order: z.string(), cents: z.number().int().positive() });

describe.each(layouts)('approvals on %s', (_name, makeBackend) => {
  const backend = makeBackend();

  interface GateOptions {
    readonly approval?: ApprovalRule<z.infer<typeof refund>>;
    readonly approvalWaitSeconds?: number;
  }
  /** A test tool's approval options: `'required'` unless the test gives a rule. */
  const gateOf = (options: GateOptions) => ({
    approval: options.approval ?? ('required' as const),
    ...(options.approvalWaitSeconds === undefined
      ? {}
      : { approvalWaitSeconds: options.approvalWaitSeconds }),
  });

  async function setup(options: GateOptions = {}, ledgerOptions: Parameters<typeof backend.open>[0] = {}) {
    const ledger = await backend.open({ waitSeconds: 0, ...ledgerOptions });
    const runs: unknown[] = [];
    const tool = ledger.tool({
      name: 'refund',
      kind: 'mutation',
      input: refund,
      ...gateOf(options),
      handler: async (input) => {
        runs.push(input);
        return { refunded: input.cents, order: input.order };
      },
    });
    const row = async (key: string) =>
      (
        await backend.sql<Record<string, unknown>>(
          `SELECT status, approval, approval_deadline, attempt, final FROM "${ledger.schema}".tool_runs WHERE idempotency_key = $1`,
          [key],
        )
      )[0];
    return { ledger, tool, runs, row };
  }

  const args = { order: 'o_1', cents: 500 };
  const otherArgs = { order: 'o_1', cents: 50_000 };
  const ctx = (key: string, user = 'u_1') => ({ key, tenant: 'acme', user });
  const target = (key: string) => ({ tenant: 'acme', tool: 'refund', key });

  it('answers APPROVAL_REQUIRED on the first call, runs nothing and saves the call awaiting a decision', async () => {
    const { tool, runs, row, ledger } = await setup();
    const error = await rejection(tool.invoke(args, ctx('k1')));
    expect(error.code).toBe('APPROVAL_REQUIRED');
    expect(error.retryable).toBe(true);
    expect(error.message).toContain('"k1"');
    expect(error.message).toContain('tool-ledger approve --tenant acme --tool refund --key k1');
    expect(error.approval).toMatchObject({ tenant: 'acme', tool: 'refund', key: 'k1' });
    expect(error.approval?.deadline).toBeInstanceOf(Date);
    expect(runs).toHaveLength(0);
    expect(await row('k1')).toMatchObject({ status: 'awaiting_approval', approval: { arguments: args } });
    const listed = await ledger.approvals.list({ tenant: 'acme' });
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ key: 'k1', tool: 'refund', user: 'u_1', arguments: args });
  });

  it('the full state table: each state met by the same arguments, other arguments and another user', async () => {
    const { ledger, tool, runs } = await setup({}, { approvalTtlSeconds: 1 });
    const code = async (call: Promise<unknown>) => (await rejection(call)).code;
    // none: the first call asks.
    expect(await code(tool.invoke(args, ctx('none')))).toBe('APPROVAL_REQUIRED');
    // awaiting
    await rejection(tool.invoke(args, ctx('awaiting')));
    expect(await code(tool.invoke(args, ctx('awaiting')))).toBe('APPROVAL_REQUIRED');
    expect(await code(tool.invoke(otherArgs, ctx('awaiting')))).toBe('KEY_REUSED');
    expect(await code(tool.invoke(args, ctx('awaiting', 'u_2')))).toBe('KEY_REUSED');
    // declined
    await rejection(tool.invoke(args, ctx('declined')));
    await ledger.decline({ ...target('declined'), by: 'ops@acme', reason: 'duplicate refund' });
    const declined = await rejection(tool.invoke(args, ctx('declined')));
    expect(declined.code).toBe('APPROVAL_DECLINED');
    expect(declined.retryable).toBe(false);
    expect(declined.message).toContain('duplicate refund');
    expect(declined.approval?.decision).toMatchObject({ by: 'ops@acme', reason: 'duplicate refund' });
    expect(await code(tool.invoke(otherArgs, ctx('declined')))).toBe('KEY_REUSED');
    expect(await code(tool.invoke(args, ctx('declined', 'u_2')))).toBe('KEY_REUSED');
    // approved: another user and other arguments are refused before and after the approval runs.
    await rejection(tool.invoke(args, ctx('approved')));
    await ledger.approve({ ...target('approved'), by: 'ops@acme' });
    expect(await code(tool.invoke(otherArgs, ctx('approved')))).toBe('KEY_REUSED');
    expect(await code(tool.invoke(args, ctx('approved', 'u_2')))).toBe('KEY_REUSED');
    const ran = await tool.invoke(args, ctx('approved'));
    expect(ran).toMatchObject({ outcome: 'approved', value: { refunded: 500 } });
    const again = await tool.invoke(args, ctx('approved'));
    expect(again).toMatchObject({ outcome: 'replayed', value: { refunded: 500 } });
    expect(await code(tool.invoke(otherArgs, ctx('approved')))).toBe('KEY_REUSED');
    expect(await code(tool.invoke(args, ctx('approved', 'u_2')))).toBe('KEY_REUSED');
    expect(runs).toHaveLength(1);
    // expired: the deadline (1 s) passes undecided.
    await rejection(tool.invoke(args, ctx('expired')));
    await sleep(1100);
    const expired = await rejection(tool.invoke(args, ctx('expired')));
    expect(expired.code).toBe('APPROVAL_EXPIRED');
    expect(expired.retryable).toBe(false);
    expect(await code(tool.invoke(otherArgs, ctx('expired')))).toBe('KEY_REUSED');
    expect(await code(tool.invoke(args, ctx('expired', 'u_2')))).toBe('KEY_REUSED');
    const late = await rejection(ledger.approve({ ...target('expired'), by: 'ops@acme' }));
    expect(late.code).toBe('APPROVAL_EXPIRED');
    expect(runs).toHaveLength(1);
  });

  it('a decision on a key awaiting none says its status; an anonymous one is refused', async () => {
    const { ledger, tool } = await setup({ approval: (input) => input.cents > 1000 });
    const none = await rejection(ledger.approve({ ...target('nothing'), by: 'ops' }));
    expect(none.code).toBe('APPROVAL_NOT_PENDING');
    expect(none.approval?.status).toBe('none');
    // Under the limit: no approval needed, it runs.
    expect((await tool.invoke(args, ctx('small'))).outcome).toBe('executed');
    const done = await rejection(ledger.decline({ ...target('small'), by: 'ops', reason: 'no' }));
    expect(done.code).toBe('APPROVAL_NOT_PENDING');
    expect(done.message).toContain('succeeded');
    await rejection(tool.invoke(otherArgs, ctx('big')));
    for (const by of [undefined, '', '   ']) {
      const anonymous = await rejection(ledger.approve({ ...target('big'), by: by as string }));
      expect(anonymous.code).toBe('APPROVAL_ACTOR_REQUIRED');
    }
    const noReason = await rejection(ledger.decline({ ...target('big'), by: 'ops', reason: '' }));
    expect(noReason.code).toBe('INPUT_INVALID');
    expect((await ledger.approve({ ...target('big'), by: 'ops' })).decision).toBe('approved');
  });

  it('two approvers racing: one decision wins, the loser is told who won', async () => {
    const { ledger, tool } = await setup();
    await rejection(tool.invoke(args, ctx('race')));
    const results = await Promise.allSettled([
      ledger.approve({ ...target('race'), by: 'alice', reason: 'ok' }),
      ledger.decline({ ...target('race'), by: 'bob', reason: 'not ok' }),
      ledger.approve({ ...target('race'), by: 'carol' }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(2);
    const winner = (won[0] as PromiseFulfilledResult<{ by: string; decision: string }>).value;
    for (const loss of lost) {
      const error = (loss as PromiseRejectedResult).reason;
      expect(error.code).toBe('APPROVAL_ALREADY_DECIDED');
      expect(error.approval.decision).toMatchObject({ by: winner.by, decision: winner.decision });
      expect(error.message).toContain(winner.by);
    }
    const audit = await backend.sql(
      `SELECT action, actor FROM "${ledger.schema}".tool_ledger_audit WHERE tenant_id = 'acme'`,
    );
    expect(audit).toEqual([
      { action: winner.decision === 'approved' ? 'approve' : 'decline', actor: winner.by },
    ]);
  });

  it('an edited approval runs the edited arguments once; both fingerprints are recorded', async () => {
    // The two calls below race for the approved run: the loser waits for the winner's result (waitSeconds), as
    // any duplicate of a run in flight does, instead of answering IN_PROGRESS.
    const { ledger, tool, runs, row } = await setup({}, { waitSeconds: 30 });
    await rejection(tool.invoke(args, ctx('edit')));
    const bad = await rejection(
      ledger.approve({ ...target('edit'), by: 'ops', arguments: { order: 'o_1', cents: -5 } }),
    );
    expect(bad.code).toBe('INPUT_INVALID');
    const decision = await ledger.approve({
      ...target('edit'),
      by: 'ops',
      reason: 'partial refund',
      arguments: { order: 'o_1', cents: 300 },
    });
    expect(decision.edited).toBe(true);
    expect(decision.approvedFingerprint).not.toBe(decision.fingerprint);
    // The caller calls again with its own arguments (the intent); what runs is the approver's edit.
    const [a, b] = await Promise.all([tool.invoke(args, ctx('edit')), tool.invoke(args, ctx('edit'))]);
    expect(runs).toEqual([{ order: 'o_1', cents: 300 }]);
    expect([a.outcome, b.outcome].sort()).toEqual(['approved', 'replayed']);
    expect(a.value).toEqual({ refunded: 300, order: 'o_1' });
    expect(b.value).toEqual(a.value);
    expect((await row('edit'))?.approval).toMatchObject({
      decision: 'approved',
      by: 'ops',
      edited: true,
      fingerprint: decision.fingerprint,
      approvedFingerprint: decision.approvedFingerprint,
    });
  });

  it('after an approval, eight concurrent retries run the handler once and the others get its result', async () => {
    // On the partitioned layout the takeover moves the row to another partition: the retries must still see a
    // race they lost (and wait for the result), never a ledger error.
    const { ledger, tool, runs, row } = await setup({}, { waitSeconds: 30 });
    await rejection(tool.invoke(args, ctx('crowd')));
    await ledger.approve({ ...target('crowd'), by: 'ops' });
    const reports = await Promise.allSettled(
      Array.from({ length: 8 }, () => tool.invoke(args, ctx('crowd'))),
    );
    const failures = reports.filter((r) => r.status === 'rejected').map((r) => String(r.reason));
    expect(failures).toEqual([]);
    const outcomes = reports.map((r) => (r as PromiseFulfilledResult<{ outcome: string }>).value.outcome);
    expect(outcomes.filter((o) => o === 'approved')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'replayed')).toHaveLength(7);
    expect(runs).toHaveLength(1);
    expect(await row('crowd')).toMatchObject({ status: 'succeeded', approval: { decision: 'approved' } });
  });

  it('approvalWaitSeconds: a waiting call runs once the approval comes, or gets the decline', async () => {
    const { ledger, tool, runs } = await setup({ approvalWaitSeconds: 10 });
    const waiting = tool.invoke(args, ctx('wait-ok'));
    await sleep(300);
    await ledger.approve({ ...target('wait-ok'), by: 'ops' });
    // 'approved', not APPROVAL_REQUIRED: the decision reached the waiting call within its budget (no timing asserted).
    expect(await waiting).toMatchObject({ outcome: 'approved', value: { refunded: 500 } });
    // Caught from the start: the waiting call may hear the decline and reject before `decline()` itself returns.
    const declined = rejection(tool.invoke(args, ctx('wait-no')));
    await sleep(300);
    await ledger.decline({ ...target('wait-no'), by: 'ops', reason: 'fraud' });
    expect((await declined).code).toBe('APPROVAL_DECLINED');
    expect(runs).toHaveLength(1);
  });

  it('approvalWaitSeconds is bounded: an undecided wait ends in APPROVAL_REQUIRED', async () => {
    const { tool } = await setup({ approvalWaitSeconds: 0.5 });
    const error = await rejection(tool.invoke(args, ctx('wait-none')));
    expect(error.code).toBe('APPROVAL_REQUIRED');
  });

  it('a rule that answers no runs the call at once, and a throwing rule leaves the key retryable', async () => {
    let throws = true;
    const { tool, runs } = await setup({
      approval: () => {
        if (throws) throw new Error('limits service down');
        return false;
      },
    });
    const error = await rejection(tool.invoke(args, ctx('rule')));
    expect(error.message).toContain('limits service down');
    expect(runs).toHaveLength(0);
    throws = false;
    expect((await tool.invoke(args, ctx('rule'))).outcome).toBe('executed');
    expect(runs).toHaveLength(1);
  });

  it('refuses approval on a read tool and a bad rule', async () => {
    const ledger: Ledger = await backend.open();
    expect(() =>
      ledger.tool({ name: 'r', kind: 'read', approval: 'required', handler: () => 1 } as never),
    ).toThrow(/approval is for kinds 'mutation' and 'job'/);
    expect(() =>
      ledger.tool({ name: 'm', kind: 'mutation', approval: 'yes' as never, handler: () => 1 }),
    ).toThrow(/use 'required' or a function/);
  });

  describe('on a job', () => {
    async function setupJob(options: GateOptions = {}) {
      const ledger = await backend.open({ waitSeconds: 0 });
      const runs: unknown[] = [];
      const tool = ledger.tool({
        name: 'refund_batch',
        kind: 'job',
        input: refund,
        ...gateOf(options),
        handler: async (input) => {
          runs.push(input);
          await sleep(50);
          return { refunded: input.cents };
        },
      });
      const jobIdOf = async (key: string) =>
        (
          await backend.sql<{ job_id: string }>(
            `SELECT job_id FROM "${ledger.schema}".tool_runs WHERE idempotency_key = $1`,
            [key],
          )
        )[0]?.job_id;
      return { ledger, tool, runs, jobIdOf };
    }
    const job = (key: string) => ({ tenant: 'acme', tool: 'refund_batch', key });
    /** Reads a job's status as its user would, for `expect.poll`: the job runs in the background. */
    const statusOf = (tool: { getJob(jobId: string, who: object): Promise<unknown> }, jobId: string) => () =>
      tool.getJob(jobId, { tenant: 'acme', user: 'u_1' });
    // A job takes 50 ms; the bound is for a loaded machine.
    const POLL = { timeout: 10_000, interval: 50 };

    it('starts nothing until approved; the next call starts it once, and later calls poll or replay it', async () => {
      const { ledger, tool, runs, jobIdOf } = await setupJob();
      const asked = await rejection(tool.invoke(args, ctx('j1')));
      expect(asked.code).toBe('APPROVAL_REQUIRED');
      expect(asked.message).toContain('tool-ledger approve --tenant acme --tool refund_batch --key j1');
      expect(runs).toHaveLength(0);
      const jobId = await jobIdOf('j1');
      expect(jobId).toMatch(/^job_/);
      // Not started: no status to report, as for a job that does not exist.
      expect(await tool.getJob(jobId!, { tenant: 'acme', user: 'u_1' })).toBeUndefined();
      expect((await rejection(tool.invoke(args, ctx('j1')))).code).toBe('APPROVAL_REQUIRED');
      expect(await ledger.approvals.list({ tenant: 'acme', tool: 'refund_batch' })).toMatchObject([
        { key: 'j1', arguments: args },
      ]);

      await ledger.approve({ ...job('j1'), by: 'ops@acme' });
      expect(await tool.getJob(jobId!, { tenant: 'acme', user: 'u_1' })).toBeUndefined();
      expect((await rejection(tool.invoke(otherArgs, ctx('j1')))).code).toBe('KEY_REUSED');
      const started = await tool.invoke(args, ctx('j1'));
      expect(started).toMatchObject({ outcome: 'approved', jobId, value: { jobId, status: 'running' } });
      await expect
        .poll(statusOf(tool, jobId!), POLL)
        .toMatchObject({ jobId, status: 'succeeded', result: { refunded: 500 } });
      const again = await tool.invoke(args, ctx('j1'));
      expect(again).toMatchObject({ outcome: 'replayed', value: { jobId, status: 'succeeded' } });
      expect(runs).toEqual([args]);
    });

    it('a declined job never starts, and getJob answers no job for it', async () => {
      const { ledger, tool, runs, jobIdOf } = await setupJob();
      await rejection(tool.invoke(args, ctx('j2')));
      await ledger.decline({ ...job('j2'), by: 'ops@acme', reason: 'not this quarter' });
      const declined = await rejection(tool.invoke(args, ctx('j2')));
      expect(declined.code).toBe('APPROVAL_DECLINED');
      expect(declined.message).toContain('not this quarter');
      expect(await tool.getJob((await jobIdOf('j2'))!, { tenant: 'acme', user: 'u_1' })).toBeUndefined();
      expect(runs).toHaveLength(0);
    });

    it('an edited approval starts the job with the edited arguments; eight racing retries start it once', async () => {
      const { ledger, tool, runs, jobIdOf } = await setupJob();
      await rejection(tool.invoke(args, ctx('j3')));
      await ledger.approve({ ...job('j3'), by: 'ops', arguments: { order: 'o_1', cents: 300 } });
      const reports = await Promise.allSettled(Array.from({ length: 8 }, () => tool.invoke(args, ctx('j3'))));
      expect(reports.filter((r) => r.status === 'rejected').map((r) => String(r.reason))).toEqual([]);
      const outcomes = reports.map((r) => (r as PromiseFulfilledResult<{ outcome: string }>).value.outcome);
      expect(outcomes.filter((o) => o === 'approved')).toHaveLength(1);
      // The others met the job running (polled) or finished (replayed), never a second start.
      expect(outcomes.every((o) => ['approved', 'polled', 'replayed'].includes(o))).toBe(true);
      const jobId = (await jobIdOf('j3'))!;
      await expect
        .poll(statusOf(tool, jobId), POLL)
        .toMatchObject({ status: 'succeeded', result: { refunded: 300 } });
      expect(runs).toEqual([{ order: 'o_1', cents: 300 }]);
    });

    it('approvalWaitSeconds: a waiting call starts the job once the approval comes', async () => {
      const { ledger, tool, runs, jobIdOf } = await setupJob({ approvalWaitSeconds: 10 });
      const waiting = tool.invoke(args, ctx('j4'));
      await sleep(300);
      await ledger.approve({ ...job('j4'), by: 'ops' });
      expect(await waiting).toMatchObject({ outcome: 'approved', value: { status: 'running' } });
      await expect.poll(statusOf(tool, (await jobIdOf('j4'))!), POLL).toMatchObject({ status: 'succeeded' });
      expect(runs).toHaveLength(1);
    });

    it('an approved job whose worker stopped mid-run is resumed after its lease, keeping its approval', async () => {
      const first = await backend.open({ waitSeconds: 0, leaseSeconds: 1 });
      let release = () => {};
      const hung = new Promise<void>((resolve) => {
        release = resolve;
      });
      const options = { name: 'refund_batch', kind: 'job', input: refund, approval: 'required' } as const;
      const stopped = first.tool({
        ...options,
        handler: async () => {
          await hung;
          return { refunded: -1 };
        },
      });
      await rejection(stopped.invoke(args, ctx('j7')));
      await first.approve({ ...job('j7'), by: 'ops' });
      const started = await stopped.invoke(args, ctx('j7'));
      expect(started).toMatchObject({ outcome: 'approved', value: { status: 'running' } });
      // The worker stops: its ledger closes without waiting for the job, so nothing renews the lease.
      await first.close({ timeoutSeconds: 0.1 });

      const second = await backend.open({ schema: first.schema, waitSeconds: 0, leaseSeconds: 1 });
      const runs: unknown[] = [];
      const resumedTool = second.tool({
        ...options,
        handler: async (input) => {
          runs.push(input);
          return { refunded: input.cents };
        },
      });
      const attempt = (started.value as { attempt: number }).attempt;
      let resumed: Awaited<ReturnType<typeof resumedTool.invoke>> | undefined;
      // Polled as running while the stopped worker's lease lasts (1 s); bounded at 50 tries 100 ms apart.
      for (let i = 0; i < 50 && resumed === undefined; i++) {
        const report = await resumedTool.invoke(args, ctx('j7'));
        if ((report.value as { attempt: number }).attempt > attempt) resumed = report;
        else await sleep(100);
      }
      expect(resumed).toMatchObject({
        outcome: 'approved',
        jobId: started.jobId,
        value: { status: 'running', attempt: attempt + 1 },
      });
      await expect
        .poll(statusOf(resumedTool, started.jobId!), POLL)
        .toMatchObject({ status: 'succeeded', result: { refunded: 500 } });
      // The stopped worker's handler ends late: its completion is fenced out, the result stays.
      release();
      await sleep(100);
      expect(await resumedTool.getJob(started.jobId!, { tenant: 'acme', user: 'u_1' })).toMatchObject({
        status: 'succeeded',
        result: { refunded: 500 },
      });
      expect(runs).toEqual([args]);
    });

    it('a rule that answers no starts the job at once', async () => {
      const { tool, runs } = await setupJob({ approval: (input) => input.cents > 1000 });
      const small = await tool.invoke(args, ctx('j5'));
      expect(small).toMatchObject({ outcome: 'executed', value: { status: 'running' } });
      await expect
        .poll(statusOf(tool, small.jobId!), POLL)
        .toMatchObject({ status: 'succeeded', result: { refunded: 500 } });
      expect((await rejection(tool.invoke(otherArgs, ctx('j6')))).code).toBe('APPROVAL_REQUIRED');
      expect(runs).toHaveLength(1);
    });
  });
});
