import type { StandardSchemaV1 } from '@standard-schema/spec';
import { deriveKey } from '../../contract/derive-key.js';
import { assertValidKey, MAX_KEY_LENGTH } from '../../contract/keys.js';
import type { CallContext, InvokeReport, ToolKind } from '../../contract/types.js';
import { inputJsonSchema, type JsonSchema, withKeyArgument } from './json-schema.js';

/**
 * The part of a ledger tool every adapter uses. Structural, with method syntax, so a tool of any input and value
 * type is accepted as it is: an adapter hands the SDK's raw arguments to `invoke`, whose own validator checks
 * them.
 */
export interface AdapterTool {
  readonly name: string;
  readonly kind: ToolKind;
  readonly description: string | undefined;
  readonly title: string | undefined;
  readonly destructive: boolean;
  readonly input: StandardSchemaV1 | undefined;
  /**
   * The tool's `approval` option (`'required'`, or a function of the input deciding per call), when it has one:
   * adapters then hand the call to the SDK's own approval flow. Optional, so a tool from before approvals fits.
   */
  readonly approval?: unknown;
  invoke(input: unknown, context: CallContext): Promise<InvokeReport<unknown>>;
  /** Job tools only. */
  getJob?(jobId: string, context: Pick<CallContext, 'tenant' | 'user'>): Promise<unknown>;
}

/** A value from an option: a fixed string, a resolver of the SDK's call details, or a default resolver. */
export type Resolver<A extends readonly unknown[]> = (...args: A) => string | undefined;

export function resolverOf<A extends readonly unknown[]>(
  option: string | Resolver<A> | undefined,
  fallback: Resolver<A>,
): Resolver<A> {
  if (typeof option === 'string') return () => option;
  return option ?? fallback;
}

/** A string field of a context object the application passes through the SDK (run context, config). */
export function stringField(value: unknown, field: string): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const found = (value as Record<string, unknown>)[field];
  return typeof found === 'string' ? found : undefined;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Refuses a key far longer than any valid one before it reaches hashing, logging or the database: a model or a
 * client can send megabytes, and the precise check (code points, printable) costs time in proportion.
 */
export function boundedKey(key: unknown, tool: string): unknown {
  // The ledger's own check, which looks at the length (one comparison) before anything else.
  if (typeof key === 'string' && key.length > MAX_KEY_LENGTH * 2) assertValidKey(key, tool);
  return key;
}

export function appendSentence(description: string | undefined, sentence: string): string {
  const base = description?.trim();
  if (!base) return sentence;
  return /[.!?]$/.test(base) ? `${base} ${sentence}` : `${base}. ${sentence}`;
}

export interface DescribeOptions {
  readonly name?: string | undefined;
  readonly description?: string | undefined;
  readonly inputJsonSchema?: JsonSchema | undefined;
  /** Where a developer passes an explicit schema or another key name, quoted in configuration errors. */
  readonly hint: string;
  /** A key argument to add to the published schema. */
  readonly keyArgument?:
    | { readonly field: string; readonly description: string; readonly required: boolean }
    | undefined;
}

export interface Described {
  readonly name: string;
  readonly title: string | undefined;
  readonly description: string | undefined;
  /** The input as an object JSON Schema, key argument included. */
  readonly schema: JsonSchema;
}

/** What every adapter publishes about a tool: its name, texts and input schema. */
export function describeTool(tool: AdapterTool, options: DescribeOptions): Described {
  const name = options.name ?? tool.name;
  let schema = inputJsonSchema(name, tool.input, options.inputJsonSchema, options.hint);
  if (options.keyArgument) {
    const { field, description, required } = options.keyArgument;
    schema = withKeyArgument(name, schema, field, description, { required, hint: options.hint });
  }
  return { name, title: tool.title, description: options.description ?? tool.description, schema };
}

/**
 * The key a runner derives for one tool call: the conversation (or run) and the model's tool call id name the
 * intent, so the same tool call, replayed on a retry or resume, gets the same key. Undefined without either.
 */
export function runnerKey(
  conversation: string | undefined,
  toolCallId: string | undefined,
  tool: string,
): string | undefined {
  if (conversation === undefined || !toolCallId) return undefined;
  boundedKey(toolCallId, tool);
  return deriveKey({ runId: conversation, toolCallId, tool });
}
