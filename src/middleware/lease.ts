import { addToSlots, removeFromSlots, type Slotted } from '../contract/slots.js';
import type { RunFence } from '../ledger/fence.js';
import type { LedgerStore } from '../ledger/store.js';
import { leaseNotRenewed, leaseTakenOver } from './messages.js';

export interface HeldLease {
  readonly signal: AbortSignal;
  renew(): Promise<void>;
  release(): void;
}

/** The shortest tick, so very short leases (tests) still renew in time without a busy timer. */
const MIN_TICK_MS = 10;

/** One lease a running handler holds. */
class Lease implements HeldLease, Slotted {
  /** Its index among the keeper's held leases (contract/slots.ts). */
  slot = -1;
  // Most handlers never look at their signal, so the controller (about 6 µs to make) is only made when one does,
  // or when it must abort.
  #controller: AbortController | undefined;
  #abortedWith: unknown;
  /** When the last renewal that the database confirmed was sent (or the claim, for the first). */
  #renewedAt = performance.now();
  /** When the last renewal was tried, confirmed or not: the keeper tries again a third of a lease later. */
  triedAt = this.#renewedAt;
  renewing = false;

  constructor(
    readonly keeper: LeaseKeeper,
    readonly store: LedgerStore,
    readonly run: RunFence,
    readonly leaseSeconds: number,
  ) {}

  get aborted(): boolean {
    return this.#abortedWith !== undefined;
  }

  abort(reason: unknown): void {
    if (this.#abortedWith !== undefined) return;
    this.#abortedWith = reason;
    this.#controller?.abort(reason);
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortedWith !== undefined) this.#controller.abort(this.#abortedWith);
    }
    return this.#controller.signal;
  }

  readonly renew = async (): Promise<void> => {
    if (this.#abortedWith !== undefined) return;
    const sent = performance.now();
    const held = await this.store.renewLease(this.run, this.leaseSeconds);
    if (!held) {
      this.abort(leaseTakenOver(this.leaseSeconds));
      return;
    }
    this.#renewedAt = Math.max(this.#renewedAt, sent);
  };

  /** The keeper's renewal: one at a time, so a slow database does not pile them up. */
  renewInBackground(now: number): void {
    this.renewing = true;
    this.triedAt = now;
    this.renew()
      .catch((error: unknown) => {
        // A failed renewal is not yet a lost lease: the next tick tries again, and the fence decides at
        // completion. Once a whole lease has passed without one, another caller may have taken over: say so.
        if (performance.now() - this.#renewedAt < this.leaseSeconds * 1000) return;
        this.abort(leaseNotRenewed(this.leaseSeconds, error));
      })
      .finally(() => {
        this.renewing = false;
      });
  }

  release(): void {
    this.keeper.release(this);
  }
}

/**
 * Keeps the leases of a ledger's running handlers alive, renewing each every third of its lease, from one timer for
 * all of them rather than one per call. When a renewal finds a lease gone (another caller took over), that
 * handler's signal aborts with `LEASE_LOST`; when the ledger closes, every held lease's signal aborts.
 */
export class LeaseKeeper {
  /** A slot list, not a `Set`: one is added and removed on every call (contract/slots.ts). */
  readonly #held: Lease[] = [];
  #timer: NodeJS.Timeout | undefined;
  #tickMs = Number.POSITIVE_INFINITY;

  hold(store: LedgerStore, run: RunFence, leaseSeconds: number): HeldLease {
    const lease = new Lease(this, store, run, leaseSeconds);
    addToSlots(this.#held, lease);
    // A sixth of the shortest lease: a renewal is due a third of a lease after the last, and goes out within a tick.
    const tickMs = Math.max(MIN_TICK_MS, (leaseSeconds * 1000) / 6);
    if (tickMs < this.#tickMs) this.#restart(tickMs);
    return lease;
  }

  release(lease: Lease): void {
    removeFromSlots(this.#held, lease);
  }

  /** Aborts every held lease's signal, for a ledger that closed before its handlers finished. */
  abortAll(reason: unknown): void {
    // A copy: an abort's listeners may end their handler, and a release moves leases within the list.
    for (const lease of this.#held.slice()) lease.abort(reason);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#tickMs = Number.POSITIVE_INFINITY;
  }

  #restart(tickMs: number): void {
    clearInterval(this.#timer);
    this.#tickMs = tickMs;
    // The timer outlives each call (starting one per call cost every call a timer); unref'd, it never keeps the
    // process alive, and ticks with nothing due cost a loop over the handlers running at that moment.
    this.#timer = setInterval(() => this.#tick(), tickMs);
    this.#timer.unref();
  }

  #tick(): void {
    const now = performance.now();
    for (const lease of this.#held.slice()) {
      if (lease.renewing || lease.aborted) continue;
      if (now - lease.triedAt >= (lease.leaseSeconds * 1000) / 3) lease.renewInBackground(now);
    }
  }
}
