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
  abortOnClose: (controller: AbortController) => () => void,
): HeldLease {
  const controller = new AbortController();
  const forget = abortOnClose(controller);
  const lost = () =>
    controller.abort(
      new ToolLedgerError(
        'LEASE_LOST',
        `This execution's lease lapsed and another caller took over the key (leaseSeconds=${leaseSeconds}). Its result will be discarded. Renew the lease (ctx.renewLease) or raise leaseSeconds for long handlers.`,
      ),
    );
  const renew = async () => {
    if (controller.signal.aborted) return;
    const held = await store.renewLease(run.id, run.attempt, run.owner, leaseSeconds);
    if (!held) lost();
  };
  const timer = setInterval(
    () => {
      // A failed renewal is not yet a lost lease: the next tick tries again, and the fence decides at completion.
      renew().catch(() => {});
    },
    Math.max(10, (leaseSeconds * 1000) / 3),
  );
  timer.unref();
  return {
    signal: controller.signal,
    renew,
    release: () => {
      clearInterval(timer);
      forget();
    },
  };
}
