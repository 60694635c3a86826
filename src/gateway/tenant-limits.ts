import { ToolLedgerError } from '../contract/errors.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';

/**
 * How much one tenant may send to one gateway process. Limits are per replica: N replicas behind a load balancer
 * let a tenant through up to N times these numbers.
 */
export interface TenantLimit {
  /** Tool calls per second, refilled continuously (a token bucket). @default unlimited */
  readonly callsPerSecond?: number;
  /** Calls a tenant may send at once after a quiet spell (the bucket's size). @default callsPerSecond, at least 1 */
  readonly burst?: number;
  /** Tool calls of the tenant in flight at once. @default unlimited */
  readonly concurrentCalls?: number;
}

/** The `limits` section of the gateway's config file. */
export interface TenantLimits {
  /** The limit of every tenant not named in `tenants`. @default {} (no limit) */
  readonly perTenant?: TenantLimit;
  /** Limits by tenant, instead of `perTenant`. @default {} */
  readonly tenants?: Readonly<Record<string, TenantLimit>>;
}

/** Why a call was refused by a limit: the `reason` of the decision metric and span attribute. */
export type LimitRefusal = 'rate' | 'concurrency';

/** How long a call refused for concurrency is told to wait: about one short call's time. */
const CONCURRENCY_RETRY_AFTER_MS = 250;
/** Tenants tracked at once; the idle ones go first (each holds a few numbers). */
const MAX_TRACKED_TENANTS = 10_000;

export function checkTenantLimits(value: unknown, invalid: (why: string) => Error): TenantLimits {
  if (!isRecord(value)) throw invalid('"limits" must be an object with "perTenant" and/or "tenants"');
  const limit = (where: string, entry: unknown): TenantLimit => {
    if (!isRecord(entry)) throw invalid(`${where} must be an object`);
    for (const [field, n] of Object.entries(entry)) {
      if (!['callsPerSecond', 'burst', 'concurrentCalls'].includes(field)) {
        throw invalid(
          `${where} has an unknown field "${field}" (known: callsPerSecond, burst, concurrentCalls)`,
        );
      }
      const whole = field !== 'callsPerSecond';
      if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || (whole && !Number.isInteger(n))) {
        throw invalid(`${where}.${field} must be a positive ${whole ? 'whole ' : ''}number`);
      }
    }
    return entry as TenantLimit;
  };
  for (const field of Object.keys(value)) {
    if (field !== 'perTenant' && field !== 'tenants') {
      throw invalid(`limits has an unknown field "${field}" (known: perTenant, tenants)`);
    }
  }
  const tenants: Record<string, TenantLimit> = {};
  if (value.tenants !== undefined) {
    if (!isRecord(value.tenants)) throw invalid('limits.tenants must map tenant names to limits');
    for (const [name, entry] of Object.entries(value.tenants))
      tenants[name] = limit(`limits.tenants.${name}`, entry);
  }
  return {
    tenants,
    ...(value.perTenant === undefined ? {} : { perTenant: limit('limits.perTenant', value.perTenant) }),
  };
}

interface TenantState {
  tokens: number;
  refilledAt: number;
  inFlight: number;
}

/** What `admit` answers: a slot to release when the call ends, or the refusal with its retry-after. */
export type Admission =
  | { readonly admitted: true; release(): void }
  | { readonly admitted: false; readonly reason: LimitRefusal; readonly error: ToolLedgerError };

/** The per-tenant token buckets and in-flight counts of one gateway process. */
export class TenantLimiter {
  readonly #state = new Map<string, TenantState>();

  constructor(
    private readonly limits: TenantLimits,
    private readonly now: () => number = () => performance.now(),
  ) {}

  #limitOf(tenant: string): TenantLimit | undefined {
    return this.limits.tenants?.[tenant] ?? this.limits.perTenant;
  }

  #stateOf(tenant: string, limit: TenantLimit): TenantState {
    let state = this.#state.get(tenant);
    if (state === undefined) {
      if (this.#state.size >= MAX_TRACKED_TENANTS) this.#forgetIdle();
      state = { tokens: burstOf(limit), refilledAt: this.now(), inFlight: 0 };
      this.#state.set(tenant, state);
    }
    return state;
  }

  /** Forgets tenants with nothing in flight and a full bucket: they start full again, as they would be. */
  #forgetIdle(): void {
    for (const [tenant, state] of this.#state) {
      const limit = this.#limitOf(tenant);
      if (state.inFlight === 0 && (limit === undefined || this.#refill(state, limit) >= burstOf(limit))) {
        this.#state.delete(tenant);
      }
    }
  }

  #refill(state: TenantState, limit: TenantLimit): number {
    const now = this.now();
    if (limit.callsPerSecond !== undefined) {
      state.tokens = Math.min(
        burstOf(limit),
        state.tokens + ((now - state.refilledAt) / 1000) * limit.callsPerSecond,
      );
    }
    state.refilledAt = now;
    return state.tokens;
  }

  /** Takes a slot for one call of the tenant, or says how long to wait. */
  admit(tenant: string | undefined, tool: string): Admission {
    const limit = this.#limitOf(tenant ?? '');
    if (limit === undefined || (limit.callsPerSecond === undefined && limit.concurrentCalls === undefined)) {
      return { admitted: true, release: () => {} };
    }
    const state = this.#stateOf(tenant ?? '', limit);
    if (limit.concurrentCalls !== undefined && state.inFlight >= limit.concurrentCalls) {
      return refused(tool, 'concurrency', CONCURRENCY_RETRY_AFTER_MS, limit);
    }
    if (limit.callsPerSecond !== undefined) {
      const tokens = this.#refill(state, limit);
      if (tokens < 1) {
        const waitMs = Math.ceil(((1 - tokens) / limit.callsPerSecond) * 1000);
        return refused(tool, 'rate', Math.max(1, waitMs), limit);
      }
      state.tokens = tokens - 1;
    }
    state.inFlight++;
    let released = false;
    return {
      admitted: true,
      release: () => {
        if (released) return;
        released = true;
        state.inFlight--;
      },
    };
  }
}

function burstOf(limit: TenantLimit): number {
  return limit.burst ?? Math.max(1, Math.ceil(limit.callsPerSecond ?? 1));
}

function refused(tool: string, reason: LimitRefusal, retryAfterMs: number, limit: TenantLimit): Admission {
  const what =
    reason === 'rate'
      ? `this account sends more than ${limit.callsPerSecond} tool calls a second`
      : `this account already has ${limit.concurrentCalls} tool calls running at once`;
  return {
    admitted: false,
    reason,
    error: new ToolLedgerError('RATE_LIMITED', `${tool} was not run: ${what}.`, { retryAfterMs }),
  };
}
