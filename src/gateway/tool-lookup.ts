import type { ToolCatalog, ToolFacts } from './catalog.js';
import type { UpstreamRequests } from './upstream.js';

// Bounds the gateway's own listing when a call names a tool it has not seen: pages and time.
const MAX_LIST_PAGES = 50;
const LIST_TIMEOUT_MS = 10_000;

/** A tool's facts for one session: from the catalog, or from the gateway's own listing of the upstream's tools. */
export class ToolLookup {
  #listing: Promise<void> | undefined;

  constructor(
    private readonly catalog: ToolCatalog,
    private readonly requests: UpstreamRequests,
    private readonly log: (line: string) => void,
  ) {}

  /** The facts of a tool; when no listing has named it, the gateway lists the upstream's tools itself. */
  async facts(name: string): Promise<ToolFacts> {
    const known = this.catalog.get(name);
    if (known) return known;
    this.#listing ??= this.#listAll().finally(() => {
      this.#listing = undefined;
    });
    await this.#listing;
    return this.catalog.get(name) ?? this.catalog.unlisted(name);
  }

  async #listAll(): Promise<void> {
    const generation = this.catalog.generation;
    let cursor: string | undefined;
    try {
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const result = await this.requests.request('tools/list', cursor === undefined ? {} : { cursor }, {
          timeoutMs: LIST_TIMEOUT_MS,
        });
        this.catalog.rewriteList(result, generation);
        cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
        if (cursor === undefined) return;
      }
    } catch (error) {
      // Unlisted tools count as mutating, so a failed listing errs on the side of the ledger.
      this.log(`tool-ledger gateway: could not list the upstream's tools: ${(error as Error).message}`);
    }
  }
}
