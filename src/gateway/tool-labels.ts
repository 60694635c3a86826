import { GATEWAY_OTHER_TOOL } from '../telemetry/vocabulary.js';

/**
 * How many tool names the upstream's listings may add to the decision metric's series (beyond the names of the
 * gateway's configuration, which always count). A call names any tool it likes, and an upstream may list
 * thousands: past this bound, their decisions count under `other`.
 */
export const MAX_LISTED_TOOL_LABELS = 200;

/**
 * The `gen_ai.tool.name` of the gateway's decision metric, bounded: a tool named in the gateway's configuration
 * (`tools`, `access.tools`) or listed by the upstream keeps its name, up to `MAX_LISTED_TOOL_LABELS` listed
 * names; every other name a client sends is `other`. A client cannot make a new series by calling made-up names.
 * Spans keep the name as called.
 */
export class ToolLabels {
  readonly #configured: ReadonlySet<string>;
  readonly #listed = new Set<string>();

  constructor(
    configured: Iterable<string>,
    private readonly maxListed = MAX_LISTED_TOOL_LABELS,
  ) {
    this.#configured = new Set(configured);
  }

  /** Notes a tool the upstream listed. A listing that later drops it keeps its label: its series exists already. */
  listed(name: string): void {
    if (this.#configured.has(name) || this.#listed.size >= this.maxListed) return;
    this.#listed.add(name);
  }

  label(name: string): string {
    return this.#configured.has(name) || this.#listed.has(name) ? name : GATEWAY_OTHER_TOOL;
  }
}
