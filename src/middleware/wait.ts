import type { CompletionNotifier } from '../ledger/notifier.js';
import { leaseRemainingMs, type RunRow } from '../ledger/run-row.js';

const FIRST_BACKOFF_MS = 20;
const MAX_BACKOFF_MS = 500;

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

  /**
   * Waits for the run in `row` to finish (or for the next backoff step). False when the wait is over: the budget
   * is spent or the caller aborted.
   */
  async waitFor(row: RunRow): Promise<boolean> {
    this.#retried = true;
    const remaining = this.#waitMs - (performance.now() - this.#started);
    if (remaining <= 0 || this.#signal?.aborted) return false;
    if (!this.#listening) {
      this.#listening = true;
      await this.#notifier.ensureListening();
    }
    const jitter = 0.8 + Math.random() * 0.4;
    await this.#notifier.wait(
      row.id,
      Math.min(remaining, this.#backoffMs * jitter, leaseRemainingMs(row) + 5),
      this.#signal,
    );
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS);
    return true;
  }
}

/** When a retry of a running key is likely to find it finished. */
export function retryAfterMs(row: RunRow): number {
  return Math.round(Math.min(Math.max(leaseRemainingMs(row), 100), 1000));
}
