import { keyArgumentDescription } from '../integrations/mcp/register.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';
import type { GatewayToolOptions } from './types.js';

/** What the gateway knows about one upstream tool, from the server's `tools/list` and the configuration. */
export interface ToolFacts {
  readonly name: string;
  readonly kind: 'read' | 'mutation';
  readonly destructive: boolean;
  readonly hasOutputSchema: boolean;
  /**
   * Whether the key travels as an argument the gateway adds (and strips). False when the tool already has an
   * argument of that name: then only `_meta["tool-ledger/idempotency-key"]` carries it, and the argument is the
   * upstream's own.
   */
  readonly keyArgument: boolean;
  readonly options: GatewayToolOptions;
}

const REPLAY_SENTENCE = (field: string) =>
  `Replay-safe: a repeated call with the same ${field} returns the original result and does not repeat the action.`;

function appendSentence(description: unknown, sentence: string): string {
  const base = typeof description === 'string' ? description.trim() : '';
  if (!base) return sentence;
  return /[.!?]$/.test(base) ? `${base} ${sentence}` : `${base}. ${sentence}`;
}

/**
 * The gateway's view of the upstream's tools. Filled from every `tools/list` answer that passes through and from
 * the gateway's own listing, emptied on `notifications/tools/list_changed` so annotations are read again.
 */
export class ToolCatalog {
  readonly #facts = new Map<string, ToolFacts>();
  #generation = 0;

  constructor(
    private readonly settings: {
      readonly keyField: string;
      readonly tools: Readonly<Record<string, GatewayToolOptions>>;
      readonly defaults: GatewayToolOptions;
      readonly log: (line: string) => void;
      /** Told every tool name a listing of the upstream's names (the decision metric's bounded labels). */
      readonly onListed?: (name: string) => void;
    },
  ) {}

  /** Bumped on every list_changed, so a listing that started before it does not refill stale facts. */
  get generation(): number {
    return this.#generation;
  }

  get(name: string): ToolFacts | undefined {
    return this.#facts.get(name);
  }

  invalidate(): void {
    this.#facts.clear();
    this.#generation++;
  }

  /** The facts of a tool the upstream did not list (or no listing answered): treated as mutating, the safe side. */
  unlisted(name: string): ToolFacts {
    const options = this.#optionsFor(name);
    return {
      name,
      kind: options.kind ?? 'mutation',
      destructive: true,
      hasOutputSchema: false,
      keyArgument: true,
      options,
    };
  }

  #optionsFor(name: string): GatewayToolOptions {
    const own = Object.hasOwn(this.settings.tools, name) ? this.settings.tools[name] : undefined;
    return { ...this.settings.defaults, ...own };
  }

  /** Records one listed tool and returns it as clients should see it. */
  learn(tool: Record<string, unknown>, generation = this.#generation): Record<string, unknown> {
    const name = tool.name;
    if (typeof name !== 'string') return tool;
    this.settings.onListed?.(name);
    const annotations = isRecord(tool.annotations) ? tool.annotations : {};
    const options = this.#optionsFor(name);
    // Only an explicit readOnlyHint: true makes a tool read-only; a missing hint defaults to false in MCP.
    // A tool that needs approval goes through the ledger whatever its annotations say.
    const readOnly = annotations.readOnlyHint === true && options.approval === undefined;
    const kind = options.kind ?? (readOnly ? 'read' : 'mutation');
    const schema = isRecord(tool.inputSchema) ? tool.inputSchema : { type: 'object' };
    const properties = isRecord(schema.properties) ? schema.properties : {};
    const field = this.settings.keyField;
    const clash = Object.hasOwn(properties, field);
    const facts: ToolFacts = {
      name,
      kind,
      destructive: annotations.destructiveHint !== false,
      hasOutputSchema: isRecord(tool.outputSchema),
      keyArgument: !clash,
      options,
    };
    if (generation === this.#generation) {
      if (clash && kind === 'mutation' && this.#facts.get(name)?.keyArgument !== false) {
        this.settings.log(
          `tool-ledger gateway: tool "${name}" already has an argument "${field}"; its key must come in _meta["tool-ledger/idempotency-key"]. Set keyField to another name to publish a key argument for it.`,
        );
      }
      this.#facts.set(name, facts);
    }
    if (kind === 'read') return tool;
    const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
    return {
      ...tool,
      description: appendSentence(
        tool.description,
        REPLAY_SENTENCE(clash ? 'tool-ledger idempotency key' : field),
      ),
      ...(clash
        ? {}
        : {
            inputSchema: {
              ...schema,
              type: 'object',
              properties: {
                ...properties,
                [field]: {
                  type: 'string',
                  minLength: 1,
                  maxLength: 255,
                  description: keyArgumentDescription(),
                },
              },
              required: [...required, field],
            },
          }),
      // With the key, a repeat of the same request is answered from the ledger: the tool is now idempotent.
      annotations: { ...annotations, readOnlyHint: false, idempotentHint: true },
    };
  }

  /** Rewrites a `tools/list` result: each mutating tool gains the key argument and the replay sentence. */
  rewriteList(result: Record<string, unknown>, generation = this.#generation): Record<string, unknown> {
    if (!Array.isArray(result.tools)) return result;
    return {
      ...result,
      tools: result.tools.map((tool: unknown) => (isRecord(tool) ? this.learn(tool, generation) : tool)),
    };
  }
}
