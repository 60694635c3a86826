import { cacheKey } from '../ledger/result-cache.js';

/**
 * Claims this process sent whose answer never came (the connection broke after the statement left), by key. The
 * claim may have committed, leaving the key `in_progress` under a lease owner token only this process knows; a
 * retry from this process that presents the token takes its own row back at once instead of waiting out the lease.
 * Each token is handed to one retry only, so two retries never both believe they hold the claim.
 */
export class LostClaims {
  readonly #tokens = new Map<string, { owner: string; untilMs: number }>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  /** A call's tenant, tool and key as one string: the replay cache's key for the same run. */
  static readonly key = cacheKey;

  /** Remembers a lost claim's owner token until its lease would have lapsed anyway. */
  remember(key: string, owner: string, leaseSeconds: number): void {
    this.#tokens.delete(key);
    if (this.#tokens.size >= this.#max) {
      const oldest = this.#tokens.keys().next();
      if (!oldest.done) this.#tokens.delete(oldest.value);
    }
    this.#tokens.set(key, { owner, untilMs: Date.now() + leaseSeconds * 1000 });
  }

  /**
   * `take` for a call's tenant, tool and key. Tokens are almost never kept, so the key is built only when one is:
   * every claim asks, and most would build a string for nothing.
   */
  takeFor(tenant: string, tool: string, key: string): string | undefined {
    return this.#tokens.size === 0 ? undefined : this.take(cacheKey(tenant, tool, key));
  }

  /** Hands the token to one caller and forgets it. */
  take(key: string): string | undefined {
    const entry = this.#tokens.get(key);
    if (!entry) return undefined;
    this.#tokens.delete(key);
    return entry.untilMs > Date.now() ? entry.owner : undefined;
  }
}
