import { type Counter, metrics, type Span } from '@opentelemetry/api';
import type { ToolLedgerError } from '../contract/errors.js';
import {
  ATTR,
  GATEWAY_ATTR,
  type GATEWAY_DECISIONS,
  GATEWAY_METRIC,
  type GATEWAY_REASONS,
  UNIT,
} from '../telemetry/vocabulary.js';
import { type AccessRules, accessDenied, type Caller, refusal } from './access.js';
import { TenantLimiter, type TenantLimits } from './tenant-limits.js';
import type { ToolLabels } from './tool-labels.js';

type Decision = (typeof GATEWAY_DECISIONS)[number];
type Reason = (typeof GATEWAY_REASONS)[number];

/** What the gate answers one call: go on (and release when done), or the tool error that refuses it. */
export type GateAnswer =
  | { readonly admitted: true; release(): void }
  | { readonly admitted: false; readonly error: ToolLedgerError };

const METER_NAME = 'tool-ledger-gateway';

/**
 * The gateway's admission of each tool call, before anything else: the access rules over the caller's verified
 * identity, then the tenant's rate and concurrency limits. Every decision is counted
 * (`tool_ledger.gateway.decisions`, its tool name bounded by `ToolLabels`) and set on the call's server span. Nothing here touches the ledger: a refused
 * call leaves no row, so the same key works once the caller may call.
 */
export class Gate {
  readonly #limiter: TenantLimiter;
  readonly #decisions: Counter;

  constructor(
    private readonly access: AccessRules | undefined,
    limits: TenantLimits | undefined,
    /** The metric's tool names: bounded, unlike the names clients send. */
    private readonly labels: ToolLabels,
  ) {
    this.#limiter = new TenantLimiter(limits ?? {});
    this.#decisions = metrics.getMeter(METER_NAME).createCounter(GATEWAY_METRIC.DECISIONS, {
      description:
        'Tool calls the gateway admitted or refused (access rules, per-tenant limits), by decision and reason.',
      unit: UNIT.DECISIONS,
    });
  }

  admit(tool: string, caller: Caller, span: Span): GateAnswer {
    const denied = refusal(this.access, tool, caller);
    if (denied !== undefined) {
      this.#record(tool, 'denied', denied, span);
      return { admitted: false, error: accessDenied(tool, denied) };
    }
    const limited = this.#limiter.admit(caller.tenant, tool);
    if (!limited.admitted) {
      this.#record(tool, 'limited', limited.reason, span);
      return { admitted: false, error: limited.error };
    }
    this.#record(tool, 'allowed', 'none', span);
    return limited;
  }

  #record(tool: string, decision: Decision, reason: Reason, span: Span): void {
    span.setAttribute(GATEWAY_ATTR.DECISION, decision);
    span.setAttribute(GATEWAY_ATTR.REASON, reason);
    this.#decisions.add(1, {
      [GATEWAY_ATTR.DECISION]: decision,
      [GATEWAY_ATTR.REASON]: reason,
      [ATTR.GEN_AI_TOOL_NAME]: this.labels.label(tool),
    });
  }
}
