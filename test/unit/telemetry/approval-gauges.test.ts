import { describe, expect, it } from 'vitest';
import type { ApprovalsWaitingGroup, ApprovalsWaitingSource } from '../../../src/contract/observer.js';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { type TelemetryHarness, useHarnesses } from '../../support/telemetry-harness.js';

// The approval gauges over a source that stands for the ledger's count (the real count is tested on Postgres and
// PGlite in test/db/telemetry/approvals-telemetry.test.ts): which tenants they ask for, which series they report,
// and that a failing read or a late SDK changes nothing else.

function source(groups: ApprovalsWaitingGroup[] | Error, schema = 'ledger_a') {
  const asked: (readonly string[])[] = [];
  const s: ApprovalsWaitingSource = {
    schema,
    read: async (tenants) => {
      asked.push(tenants);
      if (groups instanceof Error) throw groups;
      return groups;
    },
  };
  return { source: s, asked };
}

async function series(harness: TelemetryHarness, name: string): Promise<Record<string, number>> {
  return Object.fromEntries(
    (await harness.points(name)).map((p) => [
      `${p.attributes[ATTR.LEDGER_SCHEMA]}/${p.attributes[ATTR.TENANT_ID] ?? '-'}`,
      p.value as number,
    ]),
  );
}

const newHarness = useHarnesses();

describe('approval gauges', () => {
  it('report each allow-listed tenant and the rest, at 0 where none waits, per schema', async () => {
    const harness = newHarness();
    const observer = createOtelObserver({
      meterProvider: harness.meterProvider,
      metricTenants: ['acme', 'globex'],
    });
    const a = source([
      { tenant: 'acme', waiting: 3, oldestSeconds: 120 },
      { tenant: undefined, waiting: 5, oldestSeconds: 900 },
    ]);
    const b = source([], 'ledger_b');
    observer.approvalsWaiting?.(a.source);
    observer.approvalsWaiting?.(b.source);

    expect(await series(harness, METRIC.APPROVALS_WAITING)).toEqual({
      'ledger_a/-': 5,
      'ledger_a/acme': 3,
      'ledger_a/globex': 0,
      'ledger_b/-': 0,
      'ledger_b/acme': 0,
      'ledger_b/globex': 0,
    });
    expect(await series(harness, METRIC.APPROVALS_OLDEST_AGE)).toMatchObject({
      'ledger_a/-': 900,
      'ledger_a/acme': 120,
      'ledger_a/globex': 0,
    });
    // The allow-list is what the ledger groups by; nothing else reaches it. One read per collection for both gauges.
    expect(a.asked).toEqual([
      ['acme', 'globex'],
      ['acme', 'globex'],
    ]);
    expect((await harness.metric(METRIC.APPROVALS_OLDEST_AGE))?.descriptor.unit).toBe('s');
  });

  it('leave out a source whose read fails, and stop reading one that was removed', async () => {
    const harness = newHarness();
    const observer = createOtelObserver({ meterProvider: harness.meterProvider });
    const failing = source(new Error('connection refused'), 'down');
    const working = source([{ tenant: undefined, waiting: 2, oldestSeconds: 10 }], 'up');
    observer.approvalsWaiting?.(failing.source);
    const remove = observer.approvalsWaiting?.(working.source);

    expect(await series(harness, METRIC.APPROVALS_WAITING)).toEqual({ 'up/-': 2 });
    remove?.();
    await harness.reader.metrics();
    expect(working.asked).toHaveLength(1);
    expect(failing.asked).toHaveLength(2);
  });

  it('follow an SDK registered after the ledger registered its source', async () => {
    const observer = createOtelObserver({});
    const s = source([{ tenant: undefined, waiting: 1, oldestSeconds: 42 }]);
    observer.approvalsWaiting?.(s.source);

    const harness = newHarness().registerGlobal();
    // The next call takes the new provider, and the gauges with it.
    observer
      .startCall({
        tool: 'refund',
        kind: 'mutation',
        tenant: 'acme',
        key: 'k',
        user: undefined,
        toolCallId: undefined,
        input: {},
      })
      .end({ outcome: 'approval_required' });

    expect(await series(harness, METRIC.APPROVALS_WAITING)).toEqual({ 'ledger_a/-': 1 });
    expect(await series(harness, METRIC.APPROVALS_OLDEST_AGE)).toEqual({ 'ledger_a/-': 42 });
  });

  it('are not registered by an observer no ledger gave a source', async () => {
    const harness = newHarness();
    const observer = createOtelObserver({ meterProvider: harness.meterProvider });
    observer
      .startCall({
        tool: 'send_invoice',
        kind: 'mutation',
        tenant: 'acme',
        key: 'k',
        user: undefined,
        toolCallId: undefined,
        input: {},
      })
      .end({ outcome: 'executed', executionSeconds: 0.01 });
    expect(await harness.metric(METRIC.TOOL_CALLS)).toBeDefined();
    expect(await harness.metric(METRIC.APPROVALS_WAITING)).toBeUndefined();
  });
});
