import type { ResolvedConfig } from '../config.js';
import { ToolLedgerError } from '../contract/errors.js';
import type { CallObserver } from '../contract/observer.js';
import type { CompletionNotifier } from '../ledger/notifier.js';
import type { LedgerStore } from '../ledger/store.js';

/** What every tool of one ledger shares. Internal. */
export class LedgerRuntime {
  readonly #pending = new Set<Promise<unknown>>();
  #closed = false;

  constructor(
    readonly config: ResolvedConfig,
    readonly store: LedgerStore,
    readonly notifier: CompletionNotifier,
    readonly observer: CallObserver,
  ) {}

  get closed(): boolean {
    return this.#closed;
  }

  assertOpen(tool: string): void {
    if (this.#closed) {
      throw new ToolLedgerError(
        'LEDGER_CLOSED',
        `Tool "${tool}" was called after ledger.close(). Create a new ledger with createLedger() to make more calls.`,
      );
    }
  }

  /** Keeps `close()` waiting until this work settles (calls in flight and background jobs). */
  track<T>(work: Promise<T>): Promise<T> {
    this.#pending.add(work);
    const forget = () => this.#pending.delete(work);
    work.then(forget, forget);
    return work;
  }

  async drain(): Promise<void> {
    this.#closed = true;
    while (this.#pending.size > 0) await Promise.allSettled([...this.#pending]);
  }
}
