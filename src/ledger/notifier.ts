import type { LedgerStore } from './store.js';

export type WakeReason = 'notified' | 'timeout' | 'aborted';

// Notices remembered for waiters that register a moment after theirs arrived (between a claim's answer and the
// wait); the newest few suffice, since a waiter registers within the same turn of the event loop or two.
const RECENT_NOTICES = 1024;

/**
 * Wakes waiters when a run completes. One LISTEN subscription per ledger; waiters register by run id. When
 * LISTEN is unavailable, waiters still wake on their backoff timer, so notifications are an optimisation only.
 */
export class CompletionNotifier {
  readonly #store: LedgerStore;
  readonly #waiters = new Map<string, Set<(reason: WakeReason) => void>>();
  readonly #recent = new Map<string, number>();
  #sequence = 0;
  #subscription: Promise<unknown> | undefined;
  #unsubscribe: (() => Promise<void>) | undefined;

  constructor(store: LedgerStore) {
    this.#store = store;
  }

  // One handler for the ledger's life: the driver keeps it registered across reconnects, and a second
  // subscription attempt after a failed one must not add a duplicate.
  readonly #onNotify = (payload: string) => {
    this.#sequence++;
    this.#recent.delete(payload);
    this.#recent.set(payload, this.#sequence);
    if (this.#recent.size > RECENT_NOTICES) this.#recent.delete(this.#recent.keys().next().value!);
    for (const wake of this.#waiters.get(payload) ?? []) wake('notified');
  };

  /**
   * Starts listening (once); safe to call before every wait. The driver re-subscribes with backoff after its
   * LISTEN connection dies, so this only retries a subscription that never started.
   */
  async ensureListening(): Promise<void> {
    this.#subscription ??= this.#store.driver
      .listen(this.#store.channel, this.#onNotify)
      .then((unsubscribe) => {
        this.#unsubscribe = unsubscribe;
      })
      .catch(() => {
        // Fall back to polling; try LISTEN again on a later wait.
        this.#subscription = undefined;
      });
    await this.#subscription;
  }

  /** A point in the stream of notices, taken before a claim: `wait(..., since)` counts notices after it. */
  mark(): number {
    return this.#sequence;
  }

  /**
   * Resolves on the run's completion notice, after `timeoutMs`, or when `signal` aborts. A notice that arrived
   * after `since` (and before this call) resolves it at once.
   */
  wait(runId: string, timeoutMs: number, signal?: AbortSignal, since?: number): Promise<WakeReason> {
    if (since !== undefined && (this.#recent.get(runId) ?? -1) > since) return Promise.resolve('notified');
    return new Promise((resolve) => {
      let set = this.#waiters.get(runId);
      if (!set) {
        set = new Set();
        this.#waiters.set(runId, set);
      }
      const done = (reason: WakeReason) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        set.delete(done);
        if (set.size === 0) this.#waiters.delete(runId);
        resolve(reason);
      };
      const aborted = () => done('aborted');
      const timer = setTimeout(() => done('timeout'), Math.max(0, timeoutMs));
      signal?.addEventListener('abort', aborted, { once: true });
      set.add(done);
    });
  }

  async close(): Promise<void> {
    for (const set of this.#waiters.values()) for (const wake of set) wake('aborted');
    await this.#unsubscribe?.().catch(() => {});
  }
}
