import type { CompletionNotifier } from '../ledger/notifier.js';
import { type ClaimRow, leaseRemainingMs, type RunRow } from '../ledger/run-row.js';

const FIRST_BACKOFF_MS = 20;
const MAX_BACKOFF_MS = 500;
// Claims in a row that found the run in flight but could not register (it changed under them) before sleeping anyway.
const MAX_UNREGISTERED = 3;

/**
 * How one call waits for a parallel execution of its key: LISTEN for the completion, with jittered exponential
 * backoff as the fallback, bounded by `waitSeconds` and the caller's signal. Also keeps the call's `waitedMs`.
 */
export class Waiter {
  readonly #notifier: CompletionNotifier;
  readonly #waitMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #started = performance.now();
  #backoffMs = FIRST_BACKOFF_MS;
  #listening = false;
  #retried = false;
  #since = 0;
  #unregistered = 0;

  constructor(notifier: CompletionNotifier, waitMs: number, signal: AbortSignal | undefined) {
    this.#notifier = notifier;
    this.#waitMs = waitMs;
    this.#signal = signal;
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
   * Waits for the run in `row` to finish (or for the next backoff step). False when the wait is over: the budget
   * is spent or the caller aborted. The completion notifies only waiters its claim registered (`row.waiting`),
   * and only a registration made while listening is sure to be heard, so the first call listens and claims again.
   */
  async waitFor(row: ClaimRow): Promise<boolean> {
    this.#retried = true;
    const remaining = this.#waitMs - (performance.now() - this.#started);
    if (remaining <= 0 || this.#signal?.aborted) return false;
    if (!this.#listening) {
      this.#listening = true;
      await this.#notifier.ensureListening();
      return true;
    }
    // Not registered: the run changed between the claim's snapshot and its registration, likely finished.
    if (!row.waiting && ++this.#unregistered <= MAX_UNREGISTERED) return true;
    this.#unregistered = 0;
    const jitter = 0.8 + Math.random() * 0.4;
    await this.#notifier.wait(
      row.id,
      Math.min(remaining, this.#backoffMs * jitter, leaseRemainingMs(row) + 5),
      this.#signal,
      this.#since,
    );
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS);
    return true;
  }
}

/** When a retry of a running key is likely to find it finished. */
export function retryAfterMs(row: RunRow): number {
  return Math.round(Math.min(Math.max(leaseRemainingMs(row), 100), 1000));
}
