/**
 * Which statement a claim sends first. A fresh key is best served by the bare insert (`insertRunSql`): it writes
 * the row and returns only its id, which is all a first execution needs, since the caller already knows every other
 * column. A key that exists is best served by the full claim (`claimSql`), which reads, takes over or registers a
 * waiter in the same round trip; sent after a refused insert, it costs a second one.
 *
 * So the store follows what its recent claims found: it tries the insert first while most keys were new, and goes
 * straight to the full claim while most existed (replays from another process, a batch re-run). Either way the
 * outcome is the same; only the number of round trips differs. Every claim's finding, from either statement,
 * updates the estimate, so a switch back needs no probing.
 */
export class ClaimPath {
  /** Share of recent claims that found the key already there: an exponential average, weight 1/16 per claim. */
  #existingShare = 0;
  #insertFirst = true;

  get insertFirst(): boolean {
    return this.#insertFirst;
  }

  /**
   * Records what one claim found: a fresh key, or a row already there. The switch has a dead band (two thirds one
   * way, one third back), so an even mix settles on one statement instead of flapping with every claim.
   */
  found(existing: boolean): void {
    this.#existingShare += ((existing ? 1 : 0) - this.#existingShare) / 16;
    if (this.#insertFirst && this.#existingShare > 2 / 3) this.#insertFirst = false;
    else if (!this.#insertFirst && this.#existingShare < 1 / 3) this.#insertFirst = true;
  }
}
