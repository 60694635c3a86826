import type { LedgerStore } from './store.js';

/**
 * Wakes waiters when a run completes. One LISTEN subscription per ledger; waiters register by run id. When
 * LISTEN is unavailable, waiters still wake on their backoff timer, so notifications are an optimisation only.
 */
export class CompletionNotifier {
  readonly #store: LedgerStore;
  readonly #waiters = new Map<string, Set<() => void>>();
  #subscription: Promise<unknown> | undefined;
  #unsubscribe: (() => Promise<void>) | undefined;

  constructor(store: LedgerStore) {
    this.#store = store;
  }

  // One handler for the ledger's life: the driver keeps it registered across reconnects, and a second
  // subscription attempt after a failed one must not add a duplicate.
  readonly #onNotify = (payload: string) => {
    for (const wake of this.#waiters.get(payload) ?? []) wake();
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

  /** Resolves on the run's completion notice, after `timeoutMs`, or when `signal` aborts. */
  wait(runId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let set = this.#waiters.get(runId);
      if (!set) {
        set = new Set();
        this.#waiters.set(runId, set);
      }
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        set.delete(done);
        if (set.size === 0) this.#waiters.delete(runId);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, timeoutMs));
      signal?.addEventListener('abort', done, { once: true });
      set.add(done);
    });
  }

  async close(): Promise<void> {
    for (const set of this.#waiters.values()) for (const wake of set) wake();
    await this.#unsubscribe?.().catch(() => {});
  }
}
