import { describe, expect, it } from 'vitest';
import { ToolLedgerError } from '../../src/contract/errors.js';
import type { ClaimRow } from '../../src/ledger/run-row.js';
import type { SaveAnswer } from '../../src/middleware/background-saves.js';
import {
  type ClaimSettings,
  handlerTable,
  LINKS_ORIGINAL,
  type Next,
} from '../../src/middleware/claim-loop.js';
import { ENDING_RULES, ENDINGS, type Ending, type EndingKind } from '../../src/middleware/endings.js';
import type { ClaimCall, Executed, ExecutorSettings } from '../../src/middleware/execution.js';
import type { CallFacts } from '../../src/middleware/facts.js';
import { finish } from '../../src/middleware/finish.js';
import type { Verdict, VerdictKind } from '../../src/middleware/verdict.js';

/**
 * The middleware's decision tables, row by row, through the code that reads them: `finish` for `ENDING_RULES`
 * (what is saved, what the caller gets when the save lands, is refused, is kept or is dropped) and the verdict
 * table of each tool kind (what the claim loop does next). The spec is written as lines, one per row.
 */

const at = new Date('2026-01-01T00:00:00Z');
const row = (overrides: Partial<ClaimRow> = {}): ClaimRow =>
  ({
    claim: 'existing',
    runKey: { tenant: 'default', tool: 't', key: 'k' },
    id: '1',
    attempt: 1,
    lease_owner: 'owner',
    user_id: null,
    parameter_hash: 'h',
    status: 'succeeded',
    final: false,
    result_json: { ok: true },
    error_json: null,
    job_id: null,
    trace_id: 'a'.repeat(32),
    span_id: 'b'.repeat(16),
    completed_at: at,
    lease_live: false,
    lease_remaining_ms: null,
    expires_in_ms: 60_000,
    takeover_due: false,
    waiting: false,
    steps: null,
    step_token: null,
    lapsed: false,
    ...overrides,
  }) as ClaimRow;

const lines = (spec: string) =>
  spec
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s+/));

describe('ENDING_RULES, read by finish()', () => {
  // kind | saved status (or -) | final | outcome | caller gets | tool error | a failed save is reported
  const SPEC = lines(`
    succeeded           succeeded  false    executed  value      no   report
    committed           -          -        executed  value      no   -
    recovered           succeeded  false    replayed  value      no   report
    handler_threw       failed     verdict  failed    the_error  yes  quiet
    result_not_json     failed     true     failed    the_error  no   quiet
    outcome_unknown     unknown    false    unknown   the_error  no   quiet
    lease_lost          -          -        failed    the_error  no   -
    tx_handler_threw    failed     verdict  failed    the_error  yes  quiet
    tx_result_not_json  failed     false    failed    the_error  no   quiet
    tx_driver_failed    failed     false    failed    the_error  no   quiet`);

  it('has one spec line per ending, and the table a row per ending', () => {
    expect(SPEC.map(([kind]) => kind).sort()).toEqual([...ENDINGS].sort());
    expect(Object.keys(ENDING_RULES).sort()).toEqual([...ENDINGS].sort());
  });

  const handlerError = new Error('the ending’s own error');
  const endingOf = (kind: EndingKind, final = true): Ending => ({
    kind,
    text: '{"ok":true}',
    completedAt: at,
    error: handlerError,
    final,
  });

  async function finished(kind: EndingKind, answer: SaveAnswer | undefined, final = true) {
    const saved: unknown[] = [];
    const settings = {
      name: 't',
      ttlSeconds: 60,
      runtime: {
        saves: {
          save: async (...args: unknown[]) => {
            saved.push(args[2]);
            return answer;
          },
        },
      },
    } as unknown as ExecutorSettings;
    const facts: CallFacts = {};
    const executed = await finish(
      settings,
      row(),
      endingOf(kind, final),
      'key',
      { recordLedgerOperation() {} } as never,
      facts,
    );
    return { executed, saved: saved as Array<{ status: string; final: boolean }>, facts };
  }

  const LANDED_AT = new Date('2026-02-02T00:00:00Z');
  const ANSWERS: Record<string, SaveAnswer> = {
    landed: { kind: 'landed', at: LANDED_AT },
    refused: { kind: 'refused' },
    kept: { kind: 'kept', error: new Error('down') },
    dropped: {
      kind: 'dropped',
      error: new Error('down'),
      load: { count: 1, bytes: 2, maxCount: 1, maxBytes: 2 },
    },
  };

  const cases = SPEC.flatMap((line) =>
    Object.keys(ANSWERS).map((answer) => [line[0]!, answer, line] as const),
  );

  it.each(cases)(
    '%s, its save %s',
    async (kind, answerName, [, status, final, outcome, gets, toolError, report]) => {
      const saves = status !== '-';
      const { executed, saved, facts } = await finished(kind as EndingKind, ANSWERS[answerName]);
      expect(facts.toolError === true).toBe(toolError === 'yes');
      expect(saved.length).toBe(saves ? 1 : 0);
      if (saves) {
        expect(saved[0]!.status).toBe(status);
        expect(saved[0]!.final).toBe(final === 'verdict' ? true : final === 'true');
      }
      const errorOf = (e: Executed) => ('error' in e ? e.error : undefined);
      const failedSave = saves && (answerName === 'kept' || answerName === 'dropped');
      if (failedSave && report === 'report') {
        // The effect happened and its result is not saved: the caller is told, retryably only while it is kept.
        expect(executed.outcome).toBe('failed');
        const error = errorOf(executed) as ToolLedgerError;
        expect(error).toBeInstanceOf(ToolLedgerError);
        expect(error.code).toBe('LEDGER_UNAVAILABLE');
        expect(error.retryable).toBe(answerName === 'kept');
      } else if (gets === 'value' && saves && answerName !== 'landed') {
        // A value whose completion was refused (or not saved) is not the caller's: another caller took the key over.
        expect(executed.outcome).toBe('failed');
        expect((errorOf(executed) as ToolLedgerError).code).toBe('LEASE_LOST');
      } else if (gets === 'value') {
        expect(executed).toEqual({
          outcome,
          value: { ok: true },
          completedAt: saves ? LANDED_AT : at,
        });
      } else {
        expect(executed).toEqual({ outcome, error: handlerError });
      }
    },
  );

  it.each(['handler_threw', 'tx_handler_threw'] as const)(
    '%s saves the verdict of the error: final or not',
    async (kind) => {
      for (const final of [true, false]) {
        const { saved } = await finished(kind, ANSWERS.landed, final);
        expect(saved[0]!.final).toBe(final);
      }
    },
  );
});

describe('the verdict table of each tool kind', () => {
  const executed: Executed = { outcome: 'executed', value: { ran: true }, completedAt: at };
  function tableOf(kind: 'mutation' | 'job', renewed = true) {
    const tracked: unknown[] = [];
    const settings = {
      name: 't',
      execute: async () => executed,
      approval: { rule: undefined },
      runtime: {
        store: { recordConflict: async () => {}, renewLease: async () => renewed },
        // The approval statements find nothing: the row changed since the claim read it, so claim again.
        approvals: { state: async () => undefined, takeApproved: async () => undefined },
        notifier: { mark: () => 0 },
        track: (work: unknown) => tracked.push(work),
      },
    } as unknown as ClaimSettings;
    Object.assign(settings.approval, { name: 't', runtime: settings.runtime });
    return { table: handlerTable(kind, settings), tracked };
  }
  const call = (waits: boolean): ClaimCall =>
    ({
      request: { paramsHash: 'h' },
      facts: {},
      waiter: { waitFor: async () => waits, elapsedMs: () => 5 },
    }) as unknown as ClaimCall;

  const verdictOf = (kind: VerdictKind, r: ClaimRow): Verdict =>
    (kind === 'conflict' ? { kind, row: r, reason: 'params_mismatch' } : { kind, row: r }) as Verdict;

  /** What a handler's answer says, as one word: the loop's next move, or the outcome and whether it is an error. */
  async function describeNext(
    kind: 'mutation' | 'job',
    verdict: VerdictKind,
    options: { waits?: boolean; renewed?: boolean } = {},
  ) {
    const { table } = tableOf(kind, options.renewed ?? true);
    const r = row({
      status: verdict === 'final_failure' ? 'failed' : 'succeeded',
      error_json: { name: 'ToolFailure', code: 'TOOL_FAILED', message: 'no', final: true },
    });
    const handler = table[verdict] as (v: Verdict, c: ClaimCall) => Next | Promise<Next>;
    const next = await handler(verdictOf(verdict, r), call(options.waits ?? false));
    if (typeof next === 'string') return next;
    return `${next.outcome}${'error' in next ? `:${(next.error as { code?: string }).code ?? 'error'}` : ''}`;
  }

  // verdict | a mutation's answer | a job's answer
  const SPEC = lines(`
    won             executed                 executed
    replay          replayed                 replayed
    final_failure   replayed:TOOL_FAILED     replayed
    conflict        conflict:KEY_REUSED      conflict:KEY_REUSED
    running         in_progress:IN_PROGRESS  polled
    abandoned       race                     polled
    reclaimed       executed                 executed
    raced           race                     race
    unknown         unknown:OUTCOME_UNKNOWN  polled
    awaiting        race                     race
    approved        race                     race
    declined        declined:APPROVAL_DECLINED  declined:APPROVAL_DECLINED`);

  it('has one spec line per verdict, and each table a handler per verdict', () => {
    expect(SPEC.map(([verdict]) => verdict).sort()).toEqual(Object.keys(LINKS_ORIGINAL).sort());
    for (const kind of ['mutation', 'job'] as const)
      expect(Object.keys(tableOf(kind).table).sort()).toEqual(Object.keys(LINKS_ORIGINAL).sort());
  });

  it.each(SPEC)('%s: a mutation answers %s, a job %s', async (verdict, mutation, job) => {
    expect(await describeNext('mutation', verdict as VerdictKind)).toBe(mutation);
    expect(await describeNext('job', verdict as VerdictKind)).toBe(job);
  });

  it('waits on a running key while the waiter has budget, then answers IN_PROGRESS', async () => {
    expect(await describeNext('mutation', 'running', { waits: true })).toBe('wait');
    expect(await describeNext('mutation', 'running', { waits: false })).toBe('in_progress:IN_PROGRESS');
  });

  it('claims again when a reclaimed lease can no longer be renewed, for both kinds', async () => {
    expect(await describeNext('mutation', 'reclaimed', { renewed: false })).toBe('race');
    expect(await describeNext('job', 'reclaimed', { renewed: false })).toBe('race');
  });

  it('links the span to the earlier execution exactly for the verdicts whose row is one', () => {
    const linked = Object.entries(LINKS_ORIGINAL)
      .filter(([, links]) => links)
      .map(([verdict]) => verdict)
      .sort();
    expect(linked).toEqual([
      'abandoned',
      'approved',
      'awaiting',
      'conflict',
      'declined',
      'final_failure',
      'replay',
      'running',
      'unknown',
    ]);
  });
});
