import type { CompletionNotifier } from '../ledger/notifier.js';

const FIRST_BACKOFF_MS = 50;
// A decision notifies every waiter; the poll is the fallback for a LISTEN that is down (or a pooler that drops
// it), so a decision is seen within this long without one.
const MAX_BACKOFF_MS = 1000;

/**
 * How one call waits for a person's decision (`approvalWaitSeconds`): LISTEN for the decision's notice (the
 * decision always notifies), with a backoff poll as the fallback, bounded by the budget and the caller's signal.
 * Unlike `Waiter`, there is no lease to bound a step: the budget and the backoff alone do.
 */
export class ApprovalWait {
  readonly #notifier: CompletionNotifier;
  readonly #budgetMs: number;
  readonly #signal: AbortSignal | undefined;
  readonly #started = performance.now();
  #backoffMs = FIRST_BACKOFF_MS;
  #listening = false;

  constructor(notifier: CompletionNotifier, budgetMs: number, signal: AbortSignal | undefined) {
    this.#notifier = notifier;
    this.#budgetMs = budgetMs;
    this.#signal = signal;
  }

  elapsedMs(): number {
    return Math.round(performance.now() - this.#started);
  }

  /**
   * Waits for the decision on run `runId` (or the next poll). False when the wait is over: the budget is spent or
   * the caller aborted. The first call only starts listening, so the claim that follows cannot miss a notice.
   */
  async wait(runId: string, since: number): Promise<boolean> {
    const remaining = this.#budgetMs - (performance.now() - this.#started);
    if (remaining <= 0 || this.#signal?.aborted) return false;
    if (!this.#listening) {
      this.#listening = true;
      await this.#notifier.ensureListening();
      return true;
    }
    const jitter = 0.8 + Math.random() * 0.4;
    await this.#notifier.wait(runId, Math.min(remaining, this.#backoffMs * jitter), this.#signal, since);
    this.#backoffMs = Math.min(this.#backoffMs * 2, MAX_BACKOFF_MS);
    return true;
  }
}
