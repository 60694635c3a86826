import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ToolLedgerError } from '../../contract/errors.js';
import type { CallContext, InvokeReport, JobStatus } from '../../contract/types.js';
import type { LedgerTool } from '../../middleware/tool.js';
import { contextFromMeta, withCallAttributes } from '../shared/call-attributes.js';
import { errorPayload, errorText, type KeySource } from '../shared/error-text.js';
import { inputJsonSchema, withKeyArgument } from '../shared/json-schema.js';
import { markLedgerCallback } from '../shared/marker.js';
import { mcpCallAttributes } from './attributes.js';
import { publishedSchema } from './schema.js';
import type { McpRequestExtra, RegisteredMcpTools, RegisterMcpToolOptions } from './types.js';

/** `_meta` key of successful results: how the value was obtained. */
export const MCP_CALL_META_KEY = 'tool-ledger/call';
/** `_meta` key of error results: the stable code and whether a retry can help. */
export const MCP_ERROR_META_KEY = 'tool-ledger/error';

const DEFAULT_KEY_FIELD = 'idempotency_key';
const JOB_ID_FIELD = 'job_id';

/** Said to the model about the key argument; the wording is the contract for which key to send when. */
export function keyArgumentDescription(): string {
  return (
    'Idempotency key naming the intent of this request, for example a UUID you generate once for it. ' +
    'Same key = same intent: when retrying the same request (after a timeout or error), send the same key and ' +
    'you get the original result instead of the action running twice. ' +
    'A new or changed instruction is a new intent: generate a new key.'
  );
}

function replaySentence(field: string): string {
  return `Replay-safe: a repeated call with the same ${field} returns the original result and does not repeat the action.`;
}

function appendSentence(description: string | undefined, sentence: string): string {
  const base = description?.trim();
  if (!base) return sentence;
  return /[.!?]$/.test(base) ? `${base} ${sentence}` : `${base}. ${sentence}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function defaultResult(report: InvokeReport<unknown>): CallToolResult {
  const text = report.value === undefined ? 'null' : JSON.stringify(report.value);
  return {
    content: [{ type: 'text', text }],
    ...(isRecord(report.value) ? { structuredContent: report.value } : {}),
  };
}

function callMeta(report: InvokeReport<unknown>): Record<string, unknown> {
  return {
    outcome: report.outcome,
    replayed: report.outcome === 'replayed',
    ...(report.completedAt ? { completedAt: report.completedAt.toISOString() } : {}),
    ...(report.kind === 'read' ? {} : { attempt: report.attempt }),
    ...(report.jobId ? { jobId: report.jobId } : {}),
  };
}

/** A tool error result: text for the model, the stable code for programs. */
export function mcpErrorResult(error: ToolLedgerError, tool: string, keySource: KeySource): CallToolResult {
  const payload = errorPayload(error);
  return {
    isError: true,
    content: [{ type: 'text', text: errorText(error, tool, keySource) }],
    structuredContent: { error: payload },
    _meta: {
      [MCP_ERROR_META_KEY]: {
        code: error.code,
        retryable: error.retryable,
        ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      },
    },
  };
}

function jobResult(status: JobStatus, statusTool: string): CallToolResult {
  const next =
    status.status === 'running'
      ? ` Call ${statusTool} with {"${JOB_ID_FIELD}": "${status.jobId}"} to follow it.`
      : status.status === 'abandoned'
        ? ' Its worker stopped before finishing; retry this call with the same key to resume it.'
        : '';
  return {
    content: [
      { type: 'text', text: `Job ${status.jobId} is ${status.status}.${next} ${JSON.stringify(status)}` },
    ],
    structuredContent: { ...status },
  };
}

async function resolve(
  resolver: ((extra: McpRequestExtra) => string | undefined | Promise<string | undefined>) | undefined,
  extra: McpRequestExtra,
): Promise<string | undefined> {
  return resolver ? await resolver(extra) : undefined;
}

/**
 * Registers a ledger tool on an `McpServer` (MCP TypeScript SDK 1.x).
 *
 * Mutations and jobs get a required key argument, a replay sentence in their description and the annotations
 * `idempotentHint: true, readOnlyHint: false`. Read tools register as they are, with `readOnlyHint: true`.
 * Ledger errors come back as tool results with `isError: true`, text a model can act on, and the stable code in
 * `structuredContent.error.code` and `_meta["tool-ledger/error"].code`. Anything else the handler throws is left
 * to the SDK, and protocol errors stay protocol errors.
 */
export function registerMcpTool(
  server: McpServer,
  ledgerTool: LedgerTool<never, unknown>,
  options: RegisterMcpToolOptions = {},
): RegisteredMcpTools<RegisteredTool> {
  const name = options.name ?? ledgerTool.name;
  const kind = ledgerTool.kind;
  const keyField = options.keyField ?? DEFAULT_KEY_FIELD;
  const statusToolName = options.statusToolName ?? `${name}_status`;
  const formatResult = options.formatResult ?? defaultResult;
  const keySource: KeySource = kind === 'read' ? { kind: 'runner' } : { kind: 'argument', field: keyField };
  const tool = ledgerTool as unknown as LedgerTool<unknown, unknown>;

  let schema = inputJsonSchema(
    name,
    ledgerTool.input,
    options.inputJsonSchema,
    'registerMcpTool(server, tool, { inputJsonSchema })',
  );
  let description = options.description ?? ledgerTool.description;
  if (kind !== 'read') {
    schema = withKeyArgument(name, schema, keyField, keyArgumentDescription(), {
      required: true,
      hint: 'registerMcpTool(server, tool, { keyField })',
    });
    if (kind === 'job') {
      description = appendSentence(
        description,
        `Starts a background job and returns its ${JOB_ID_FIELD}; ${statusToolName} reports its progress.`,
      );
    }
    description = appendSentence(description, replaySentence(keyField));
  }

  const callback = markLedgerCallback(async (args: Record<string, unknown>, extra: McpRequestExtra) => {
    const { [keyField]: key, ...rest } = args;
    const input = kind === 'read' ? args : rest;
    const context: CallContext = {
      key: kind === 'read' ? undefined : (key as string | undefined),
      tenant: await resolve(options.tenant, extra),
      user: await resolve(options.user, extra),
      signal: extra.signal,
    };
    let report: InvokeReport<unknown>;
    try {
      report = await withCallAttributes(
        mcpCallAttributes(extra),
        () => tool.invoke(input, context),
        contextFromMeta(extra._meta),
      );
    } catch (error) {
      if (error instanceof ToolLedgerError) return mcpErrorResult(error, name, keySource);
      throw error;
    }
    const result =
      kind === 'job' && options.formatResult === undefined
        ? jobResult(report.value as JobStatus, statusToolName)
        : formatResult(report);
    return { ...result, _meta: { ...result._meta, [MCP_CALL_META_KEY]: callMeta(report) } };
  });

  const registered = server.registerTool(
    name,
    {
      ...(ledgerTool.title === undefined ? {} : { title: ledgerTool.title }),
      ...(description === undefined ? {} : { description }),
      inputSchema: publishedSchema(schema),
      annotations: {
        ...(ledgerTool.title === undefined ? {} : { title: ledgerTool.title }),
        readOnlyHint: kind === 'read',
        ...(kind === 'read' ? {} : { destructiveHint: ledgerTool.destructive, idempotentHint: true }),
        ...(options.openWorld === undefined ? {} : { openWorldHint: options.openWorld }),
      },
      _meta: { [MCP_CALL_META_KEY]: { kind } },
    },
    callback,
  );

  let statusTool: RegisteredTool | undefined;
  if (kind === 'job') {
    statusTool = server.registerTool(
      statusToolName,
      {
        title: `${ledgerTool.title ?? name} status`,
        description: `Reports the status of a ${name} job by its ${JOB_ID_FIELD}: running, succeeded (with its result), failed (with its error) or abandoned. Read-only.`,
        inputSchema: publishedSchema({
          type: 'object',
          properties: {
            [JOB_ID_FIELD]: {
              type: 'string',
              minLength: 1,
              description: `The ${JOB_ID_FIELD} ${name} returned.`,
            },
          },
          required: [JOB_ID_FIELD],
        }),
        annotations: { readOnlyHint: true },
      },
      async (args: Record<string, unknown>, extra: McpRequestExtra): Promise<CallToolResult> => {
        const jobId = args[JOB_ID_FIELD];
        if (typeof jobId !== 'string' || jobId.length === 0) {
          return mcpErrorResult(
            new ToolLedgerError('INPUT_INVALID', `${JOB_ID_FIELD} must be a non-empty string.`, {
              issues: [{ message: 'expected a non-empty string', path: [JOB_ID_FIELD] }],
            }),
            statusToolName,
            { kind: 'runner' },
          );
        }
        try {
          const lookup = {
            tenant: await resolve(options.tenant, extra),
            user: await resolve(options.user, extra),
          };
          const status = tool.kind === 'job' ? await tool.getJob(jobId, lookup) : undefined;
          if (status === undefined) {
            return {
              isError: true,
              content: [
                {
                  type: 'text',
                  text: `JOB_NOT_FOUND: there is no ${name} job with ${JOB_ID_FIELD} "${jobId}". Check the ${JOB_ID_FIELD} that ${name} returned.`,
                },
              ],
              structuredContent: {
                error: { code: 'JOB_NOT_FOUND', message: `No job ${jobId}.`, retryable: false },
              },
              _meta: { [MCP_ERROR_META_KEY]: { code: 'JOB_NOT_FOUND', retryable: false } },
            };
          }
          return jobResult(status as JobStatus, statusToolName);
        } catch (error) {
          if (error instanceof ToolLedgerError)
            return mcpErrorResult(error, statusToolName, { kind: 'runner' });
          throw error;
        }
      },
    );
  }
  return { tool: registered, statusTool };
}
