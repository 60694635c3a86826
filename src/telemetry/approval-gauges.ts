import type { Attributes, BatchObservableResult, MeterProvider, Observable } from '@opentelemetry/api';
import type { ApprovalsWaitingGroup, ApprovalsWaitingSource } from '../contract/observer.js';
import { put } from './attributes.js';
import { reportOnce, safeExecute } from './safe.js';
import { ATTR, INSTRUMENTATION_SCOPE, METRIC, UNIT } from './vocabulary.js';

/**
 * The gauges of calls awaiting approval, `tool_ledger.approvals.waiting` and `tool_ledger.approvals.oldest_age`,
 * read from the ledgers that registered a source (a ledger does once some tool has `approval`). Their values are
 * the schema's, not this process's: every process on one schema reports the same numbers, so dashboards and alerts
 * take the `max` across instances.
 *
 * Cardinality: one series per schema for the tenants not in `metricTenants`, plus one per allow-listed tenant
 * (the rule of every tool-ledger metric), whatever the number of tenants with calls waiting.
 */
export class ApprovalGauges {
  readonly #sources = new Set<ApprovalsWaitingSource>();
  /** The providers the gauges are registered on: a provider registered later gets them at its first use. */
  readonly #providers = new WeakSet<MeterProvider>();
  readonly #tenants: readonly string[];

  constructor(metricTenants: readonly string[]) {
    this.#tenants = Object.freeze([...metricTenants]);
  }

  /** Adds a ledger's source and registers the gauges on `provider`; returns the removal. */
  add(source: ApprovalsWaitingSource, provider: MeterProvider): () => void {
    this.#sources.add(source);
    safeExecute('approval gauges', () => this.attach(provider));
    return () => {
      this.#sources.delete(source);
    };
  }

  /** Registers the gauges on `provider`, once, if any source exists: a ledger without approvals adds none. */
  attach(provider: MeterProvider): void {
    if (this.#sources.size === 0 || this.#providers.has(provider)) return;
    this.#providers.add(provider);
    const meter = provider.getMeter(INSTRUMENTATION_SCOPE);
    const waiting = meter.createObservableGauge(METRIC.APPROVALS_WAITING, {
      description: "Calls awaiting a person's decision in the ledger's schema (deadline not passed).",
      unit: UNIT.CALLS,
    });
    const oldest = meter.createObservableGauge(METRIC.APPROVALS_OLDEST_AGE, {
      description: 'How long the oldest call awaiting a decision has waited (0 when none waits).',
      unit: UNIT.SECONDS,
    });
    meter.addBatchObservableCallback((result) => this.#observe(result, waiting, oldest), [waiting, oldest]);
  }

  async #observe(result: BatchObservableResult, waiting: Observable, oldest: Observable): Promise<void> {
    await Promise.all(
      [...this.#sources].map(async (source) => {
        // A failed read (the database away, the ledger closing) leaves its series out of this collection only.
        const groups = await source.read(this.#tenants).catch((error: unknown) => {
          reportOnce('approval gauges read', error);
          return undefined;
        });
        if (groups === undefined) return;
        safeExecute('approval gauges', () => {
          for (const group of this.#withEveryTenant(groups)) {
            const attributes = groupAttributes(source.schema, group.tenant);
            result.observe(waiting, group.waiting, attributes);
            result.observe(oldest, group.oldestSeconds, attributes);
          }
        });
      }),
    );
  }

  /** Every allow-listed tenant and the rest, at 0 when the ledger found none waiting, so series never go stale. */
  #withEveryTenant(groups: readonly ApprovalsWaitingGroup[]): ApprovalsWaitingGroup[] {
    const found = new Map(groups.map((g) => [g.tenant, g]));
    return [undefined, ...this.#tenants].map(
      (tenant) => found.get(tenant) ?? { tenant, waiting: 0, oldestSeconds: 0 },
    );
  }
}

function groupAttributes(schema: string, tenant: string | undefined): Attributes {
  const attributes: Attributes = {};
  put(attributes, ATTR.LEDGER_SCHEMA, schema);
  put(attributes, ATTR.TENANT_ID, tenant);
  return attributes;
}
