import type { Attributes } from '@opentelemetry/api';
import { put } from './attributes.js';
import { ATTR, LEDGER_OPERATIONS } from './vocabulary.js';

/** Attributes of each ledger operation's duration point, made once. */
export const LEDGER_OPERATION_ATTRIBUTES: Readonly<Record<string, Attributes>> = Object.freeze(
  Object.fromEntries(LEDGER_OPERATIONS.map((op) => [op, Object.freeze({ [ATTR.LEDGER_OPERATION]: op })])),
);

export interface OutcomeLabels {
  /** Identity of the series in the in-process sums. */
  readonly key: string;
  /** Tool, kind, tenant (when allow-listed) and outcome: `tool_ledger.tool.calls`. */
  readonly attributes: Attributes;
  /** The same plus `error.type` when there is one: `gen_ai.execute_tool.duration`. */
  readonly withErrorType: Attributes;
}

const MAX_OUTCOMES = 64;

// Tool names, kinds and tenants never hold NUL (the ledger refuses them), so it separates them unambiguously.
function labelsId(tool: string, kind: string, tenant: string | undefined): string {
  return `${tool}\u0000${kind}\u0000${tenant === undefined ? '\u0001' : tenant}`;
}

/**
 * The metric attributes of one tool, kind and metric tenant, built once and shared by every call: a metric point
 * keeps the attributes object it is given, so reusing one is safe and spares an object and its copies per call.
 */
export class MetricLabels {
  readonly key: string;
  /** Tool, kind and tenant (when allow-listed): `tool_ledger.runs.in_flight`. */
  readonly attributes: Attributes;
  readonly #outcomes = new Map<unknown, Map<string | undefined, OutcomeLabels>>();
  #count = 0;

  constructor(tool: string, kind: string, tenant: string | undefined) {
    this.key = labelsId(tool, kind, tenant);
    const a: Attributes = {};
    put(a, ATTR.GEN_AI_TOOL_NAME, tool);
    put(a, ATTR.TOOL_KIND, kind);
    put(a, ATTR.TENANT_ID, tenant);
    this.attributes = Object.freeze(a);
  }

  outcome(outcome: unknown, errorType: string | undefined): OutcomeLabels {
    // By outcome, then error type: nested maps find a call's labels without building a string key per call.
    let byError = this.#outcomes.get(outcome);
    let found = byError?.get(errorType);
    if (found === undefined) {
      const attributes: Attributes = { ...this.attributes };
      put(attributes, ATTR.OUTCOME, outcome);
      const withErrorType: Attributes = { ...attributes };
      put(withErrorType, ATTR.ERROR_TYPE, errorType);
      found = {
        key: `${this.key}\u0000${String(outcome)}`,
        attributes: Object.freeze(attributes),
        withErrorType: Object.freeze(withErrorType),
      };
      // Error types come from error codes and class names: few per tool, but not bounded by the ledger.
      if (this.#count >= MAX_OUTCOMES) {
        this.#outcomes.clear();
        this.#count = 0;
        byError = undefined;
      }
      if (byError === undefined) {
        byError = new Map();
        this.#outcomes.set(outcome, byError);
      }
      byError.set(errorType, found);
      this.#count += 1;
    }
    return found;
  }
}

const MAX_TOOLS = 1000;

/** `MetricLabels` per tool, kind and metric tenant; cleared when full, like the other per-observer caches. */
export function metricLabelsCache(
  metricTenants: ReadonlySet<string>,
): (tool: string, kind: string, tenant: unknown) => MetricLabels {
  // Tool, then kind, then shown tenant: the call's own strings are the keys, where a joined key would be a new
  // string to build and hash on every call.
  const cache = new Map<string, Map<string, Map<string | undefined, MetricLabels>>>();
  let count = 0;
  return (tool, kind, tenant) => {
    const shown = typeof tenant === 'string' && metricTenants.has(tenant) ? tenant : undefined;
    let byKind = cache.get(tool);
    let byTenant = byKind?.get(kind);
    let found = byTenant?.get(shown);
    if (found === undefined) {
      found = new MetricLabels(tool, kind, shown);
      if (count >= MAX_TOOLS) {
        cache.clear();
        count = 0;
        byKind = undefined;
        byTenant = undefined;
      }
      if (byKind === undefined) {
        byKind = new Map();
        cache.set(tool, byKind);
      }
      if (byTenant === undefined) {
        byTenant = new Map();
        byKind.set(kind, byTenant);
      }
      byTenant.set(shown, found);
      count += 1;
    }
    return found;
  };
}
