import type { ToolCatalog, ToolFacts } from './catalog.js';
import type { UpstreamRequests } from './upstream.js';

// Bounds the gateway's own listing when a call names a tool it has not seen: pages, time and listings.
const MAX_LIST_PAGES = 50;
const LIST_TIMEOUT_MS = 10_000;
const MAX_LISTINGS = 3;

/** A tool's facts for one session: from the catalog, or from the gateway's own listing of the upstream's tools. */
export class ToolLookup {
  /** The listing under way; true when what it read was recorded (no list_changed came during it). */
  #listing: Promise<boolean> | undefined;

  constructor(
    private readonly catalog: ToolCatalog,
    private readonly requests: UpstreamRequests,
    private readonly log: (line: string) => void,
  ) {}

  /** The facts of a tool; when no listing has named it, the gateway lists the upstream's tools itself. */
  async facts(name: string): Promise<ToolFacts> {
    // A list_changed during a listing voids what it read (the catalog keeps no stale facts), and an upstream that
    // registers tools as a session starts sends one just then: list again, a bounded number of times, rather than
    // take a read-only tool for an unlisted, mutating one.
    for (let listings = 0; listings < MAX_LISTINGS; listings++) {
      const known = this.catalog.get(name);
      if (known) return known;
      this.#listing ??= this.#listAll().finally(() => {
        this.#listing = undefined;
      });
      if (await this.#listing) break;
    }
    return this.catalog.get(name) ?? this.catalog.unlisted(name);
  }

  async #listAll(): Promise<boolean> {
    const generation = this.catalog.generation;
    let cursor: string | undefined;
    try {
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await this.requests.request('tools/list', cursor === undefined ? {} : { cursor }, {
          timeoutMs: LIST_TIMEOUT_MS,
        });
        this.catalog.rewriteList(result, generation);
        cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
        if (cursor === undefined) break;
      }
    } catch (error) {
      // Unlisted tools count as mutating, so a failed listing errs on the side of the ledger.
      this.log(`tool-ledger gateway: could not list the upstream's tools: ${(error as Error).message}`);
      return true;
    }
    return this.catalog.generation === generation;
  }
}
