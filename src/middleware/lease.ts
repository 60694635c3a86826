import { ToolLedgerError } from '../contract/errors.js';
import type { LedgerStore } from '../ledger/store.js';

export interface HeldLease {
  readonly signal: AbortSignal;
  renew(): Promise<void>;
  release(): void;
}

/**
 * Keeps a claim's lease alive while its handler runs, renewing every third of the lease. When a renewal finds the
 * lease gone (another caller took over), the handler's signal aborts with `LEASE_LOST`.
 */
export function holdLease(
  store: LedgerStore,
  run: { id: string; attempt: number; owner: string },
  leaseSeconds: number,
  abortOnClose: (abort: (reason: unknown) => void) => () => void,
): HeldLease {
  // Most handlers never look at their signal, so the controller is only made when one does (or must abort).
  let controller: AbortController | undefined;
  let abortedWith: unknown;
  const abort = (reason: unknown) => {
    if (abortedWith !== undefined) return;
    abortedWith = reason;
    controller?.abort(reason);
  };
  const forget = abortOnClose(abort);
  const leaseMs = leaseSeconds * 1000;
  let renewedAt = performance.now();
  let renewing = false;
  const renew = async () => {
    if (abortedWith !== undefined) return;
    const sent = performance.now();
    const held = await store.renewLease(run.id, run.attempt, run.owner, leaseSeconds);
    if (!held) {
      abort(
        new ToolLedgerError(
          'LEASE_LOST',
          `This execution's lease lapsed and another caller took over the key (leaseSeconds=${leaseSeconds}). Its result will be discarded. Renew the lease (ctx.renewLease) or raise leaseSeconds for long handlers.`,
        ),
      );
      return;
    }
    renewedAt = Math.max(renewedAt, sent);
  };
  const timer = setInterval(
    () => {
      // One renewal at a time: a slow database must not pile them up.
      if (renewing || abortedWith !== undefined) return;
      renewing = true;
      renew()
        .catch((error: unknown) => {
          // A failed renewal is not yet a lost lease: the next tick tries again, and the fence decides at
          // completion. Once a whole lease has passed without one, another caller may have taken over: say so.
          if (performance.now() - renewedAt < leaseMs) return;
          abort(
            new ToolLedgerError(
              'LEASE_LOST',
              `This execution's lease could not be renewed for ${leaseSeconds} s (${error instanceof Error ? error.message : String(error)}), so another caller may take over the key. Stop work that is not yet done; the result is saved only if the lease is still held.`,
              { cause: error },
            ),
          );
        })
        .finally(() => {
          renewing = false;
          if (abortedWith !== undefined) clearInterval(timer);
        });
    },
    Math.max(10, leaseMs / 3),
  );
  timer.unref();
  return {
    get signal() {
      if (!controller) {
        controller = new AbortController();
        if (abortedWith !== undefined) controller.abort(abortedWith);
      }
      return controller.signal;
    },
    renew,
    release: () => {
      clearInterval(timer);
      forget();
    },
  };
}
