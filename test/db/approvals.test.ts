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

  async function setup(
    options: { approval?: ApprovalRule<z.infer<typeof refund>>; approvalWaitSeconds?: number } = {},
    ledgerOptions: Parameters<typeof backend.open>[0] = {},
  ) {
    const ledger = await backend.open({ waitSeconds: 0, ...ledgerOptions });
    const runs: unknown[] = [];
    const tool = ledger.tool({
      name: 'refund',
      kind: 'mutation',
      input: refund,
      approval: options.approval ?? 'required',
      ...(options.approvalWaitSeconds === undefined
        ? {}
        : { approvalWaitSeconds: options.approvalWaitSeconds }),
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

  it('refuses approval on a job and a bad rule', async () => {
    const ledger: Ledger = await backend.open();
    expect(() =>
      ledger.tool({ name: 'j', kind: 'job', approval: 'required', handler: () => 1 } as never),
    ).toThrow(/approval is for kind 'mutation'/);
    expect(() =>
      ledger.tool({ name: 'm', kind: 'mutation', approval: 'yes' as never, handler: () => 1 }),
    ).toThrow(/use 'required' or a function/);
  });
});
