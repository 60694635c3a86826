import type { CompletionNotifier } from '../ledger/notifier.js';
import { type ClaimRow, leaseRemainingMs, type RunRow } from '../ledger/run-row.js';

/** How long one wait may last in all, and how far apart its polls start and end. */
export interface WaitBounds {
  /** The whole wait's budget (`waitSeconds`, `approvalWaitSeconds`). */
  readonly budgetMs: number;
  readonly firstBackoffMs: number;
  readonly maxBackoffMs: number;
}

/**
 * The backoff of a duplicate waiting for a run in flight: its completion notifies only the waiters its claim
 * registered, so the polls start short and stay short.
 */
export const RUN_BACKOFF = { firstBackoffMs: 20, maxBackoffMs: 500 } as const;

/**
 * The backoff of a call waiting for a person's decision: a decision always notifies, and the poll is the fallback
 * for a LISTEN that is down (or a pooler that drops it), so a decision is seen within a second without one.
 */
export const DECISION_BACKOFF = { firstBackoffMs: 50, maxBackoffMs: 1000 } as const;

/** What a wait needs of the ledger's notifier. */
export type WaitNotifier = Pick<CompletionNotifier, 'ensureListening' | 'mark' | 'wait'>;

// Claims in a row that found the run in flight but could not register (it changed under them) before sleeping anyway.
const MAX_UNREGISTERED = 3;

/** One step of a wait: what it waits on and what bounds it besides the budget. */
export interface WaitStep {
  /** The notifier's mark taken before the read that decided to wait: notices after it count. */
  readonly since: number;
  /** The lease left on the run waited for: a step ends by then, when a takeover may be due. */
  readonly leaseMs?: number;
  /** False when the read that decided to wait could not register for the notice: claim again at once (a few times). */
  readonly registered?: boolean;
}

/**
 * How one call waits, for a parallel execution of its key (`waitFor`) or for a person's decision (`wait`): LISTEN
 * for the notice, with jittered exponential backoff as the fallback, bounded by its budget, the run's lease when
 * there is one, and the caller's signal. Also keeps the call's `waitedMs`.
 */
export class Waiter {
  readonly #notifier: WaitNotifier;
  readonly #bounds: WaitBounds;
  readonly #signal: AbortSignal | undefined;
  readonly #started = performance.now();
  #backoffMs: number;
  #listening = false;
  #retried = false;
  #since = 0;
  #unregistered = 0;

  constructor(notifier: WaitNotifier, bounds: WaitBounds, signal: AbortSignal | undefined) {
    this.#notifier = notifier;
    this.#bounds = bounds;
    this.#signal = signal;
    this.#backoffMs = bounds.firstBackoffMs;
  }

  /** Milliseconds spent since the call started claiming, or undefined when it claimed only once. */
  get waitedMs(): number | undefined {
    return this.#retried ? this.elapsedMs() : undefined;
  }

  elapsedMs(): number {
    return Math.round(performance.now() - this.#started);
  }

  /** A claim raced and is about to be repeated at once. */
  noteRetry(): void {
    this.#retried = true;
  }

  /** Called before every claim: notices after this point count for the wait that may follow it. */
  beforeClaim(): void {
    this.#since = this.#notifier.mark();
  }

  /**
   * Waits for the run in `row` to finish (or for the next backoff step). The completion notifies only waiters its
   * claim registered (`row.waiting`), and only a registration made while listening is sure to be heard.
   */
  waitFor(row: ClaimRow): Promise<boolean> {
    this.#retried = true;
    return this.wait(row.id, {
      since: this.#since,
      leaseMs: leaseRemainingMs(row) + 5,
      registered: row.waiting,
    });
  }

  /**
   * One step of waiting for a notice on run `runId` (or the next poll). False when the wait is over: the budget is
   * spent or the caller aborted. The first step only starts listening and answers at once, so the read that
   * follows it cannot miss a notice.
   */
  async wait(runId: string, step: WaitStep): Promise<boolean> {
    const remaining = this.#bounds.budgetMs - (performance.now() - this.#started);
    if (remaining <= 0 || this.#signal?.aborted) return false;
    if (!this.#listening) {
      this.#listening = true;
      await this.#notifier.ensureListening();
      return true;
    }
    // Not registered: the run changed between the read's snapshot and its registration, likely finished.
    if (step.registered === false && ++this.#unregistered <= MAX_UNREGISTERED) return true;
    this.#unregistered = 0;
    const jitter = 0.8 + Math.random() * 0.4;
    await this.#notifier.wait(
      runId,
      Math.min(remaining, this.#backoffMs * jitter, step.leaseMs ?? Number.POSITIVE_INFINITY),
      this.#signal,
      step.since,
    );
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.#bounds.maxBackoffMs);
    return true;
  }
}

/** When a retry of a running key is likely to find it finished. */
export function retryAfterMs(row: RunRow): number {
  return Math.round(Math.min(Math.max(leaseRemainingMs(row), 100), 1000));
}
