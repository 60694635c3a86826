import type { ResolvedConfig } from '../config/ledger.js';
import type { CallObserver } from '../contract/observer.js';
import { ApprovalStore } from '../ledger/approvals/store.js';
import type { CompletionNotifier } from '../ledger/notifier.js';
import type { LedgerStore } from '../ledger/store.js';
import { BackgroundSaves } from './background-saves.js';
import { LeaseKeeper } from './lease.js';
import { LostClaims } from './lost-claims.js';
import { closedWhileRunning, ledgerClosed } from './messages.js';
import { HeldSteps } from './steps.js';

/** What every tool of one ledger shares. Internal. */
export class LedgerRuntime {
  /**
   * Calls and background work in flight, counted rather than kept: a long-lived `Set` with an add and a delete per
   * call made V8 keep each call's promise, and all it reached, into the old generation (contract/slots.ts).
   */
  #inFlight = 0;
  /** What waits for the count to reach zero (`drain`). */
  readonly #whenIdle: (() => void)[] = [];
  readonly #running = new Set<(reason: unknown) => void>();
  #closed = false;
  /** Claims whose answer was lost, so a retry from this process can take its own row back. */
  readonly lostClaims = new LostClaims();

  /** Outcomes whose completion failed, saved again in the background within the configured limits. */
  readonly saves: BackgroundSaves;

  /** Step results finished here and not saved yet, so a later attempt from here saves rather than reruns them. */
  readonly heldSteps = new HeldSteps();

  #approvals: ApprovalStore | undefined;

  /** The statements of approvals, made at their first use: a ledger whose tools never ask makes none. */
  get approvals(): ApprovalStore {
    this.#approvals ??= new ApprovalStore(
      this.store.driver,
      this.config.schema,
      this.store.channel,
      this.store.partitioned,
    );
    return this.#approvals;
  }

  #approvalsObserved = false;

  /**
   * Hands telemetry the ledger's count of calls awaiting approval (the approval gauges), once, when the first tool
   * with `approval` is made: a ledger without one registers nothing and runs no count. Removed when the ledger
   * closes.
   */
  observeApprovals(): void {
    if (this.#approvalsObserved) return;
    this.#approvalsObserved = true;
    try {
      const remove = this.observer.approvalsWaiting?.({
        schema: this.config.schema,
        read: (tenants) => this.approvals.countAwaiting(tenants),
      });
      if (remove) this.abortOnClose(remove);
    } catch {
      // Telemetry never changes what the ledger does.
    }
  }

  /** The leases of handlers running now, renewed from one timer. */
  readonly leases = new LeaseKeeper();

  constructor(
    readonly config: ResolvedConfig,
    readonly store: LedgerStore,
    readonly notifier: CompletionNotifier,
    readonly observer: CallObserver,
  ) {
    this.saves = new BackgroundSaves({
      store,
      limits: { maxCount: config.maxUnsavedResults, maxBytes: config.maxUnsavedResultBytes },
      changed: (tool, delta) => this.#unsavedChanged(tool, delta),
      track: (work) => void this.track(work),
      // Registered for the ledger's life: closing stops the background saves once its timeout has passed.
      onClose: (stop) => this.abortOnClose(stop),
    });
    // Handlers still running once the close's timeout has passed are told to stop, and their leases left to lapse.
    this.abortOnClose((reason) => {
      this.leases.abortAll(reason);
      this.leases.stop();
    });
  }

  /** Reports a tool's count of unsaved results as 0 before anything is kept, so its series exists (and alerts see 0). */
  announceUnsaved(tool: string): void {
    this.#unsavedChanged(tool, 0);
  }

  #unsavedChanged(tool: string, delta: number): void {
    try {
      this.observer.unsavedResults?.(tool, delta);
    } catch {
      // Telemetry never changes an outcome.
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  assertOpen(tool: string): void {
    if (this.#closed) {
      throw ledgerClosed(tool);
    }
  }

  /** Keeps `close()` waiting until this work settles (calls in flight and background jobs). */
  track<T>(work: Promise<T>): Promise<T> {
    this.#inFlight++;
    work.then(this.#settled, this.#settled);
    return work;
  }

  readonly #settled = (): void => {
    this.#inFlight--;
    if (this.#inFlight > 0 || this.#whenIdle.length === 0) return;
    for (const wake of this.#whenIdle.splice(0)) wake();
  };

  /** Registers a running handler's abort, called if the ledger closes before the handler finishes. */
  abortOnClose(abort: (reason: unknown) => void): () => void {
    this.#running.add(abort);
    return () => this.#running.delete(abort);
  }

  /**
   * Refuses new calls, then waits up to `timeoutMs` for work in flight. Work still running after that is told to
   * stop through its signal and left behind: its lease lapses and a later call resumes it.
   */
  async drain(timeoutMs: number): Promise<void> {
    this.#closed = true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      // Work that settling work starts (a background save's loop) is counted before the count can reach zero.
      if (this.#inFlight > 0) {
        await Promise.race([new Promise<void>((resolve) => this.#whenIdle.push(resolve)), timeout]);
      }
    } finally {
      clearTimeout(timer);
      const reason = closedWhileRunning();
      for (const abort of this.#running) abort(reason);
    }
  }
}
