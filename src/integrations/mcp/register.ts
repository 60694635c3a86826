import type { StandardSchemaV1 } from '@standard-schema/spec';
import { ToolFailure, ToolLedgerError } from '../../contract/errors.js';
import type { CallContext, InvokeReport, JobStatus } from '../../contract/types.js';
import {
  type AdapterTool,
  appendSentence,
  boundedKey,
  describeTool,
  isRecord,
} from '../shared/adapter-tool.js';
import { contextFromMeta, withCallAttributes } from '../shared/call-attributes.js';
import { inputJsonSchema } from '../shared/json-schema.js';
import { markLedgerCallback } from '../shared/marker.js';
import {
  errorPayload,
  errorText,
  jobText,
  jobView,
  type KeyVoice,
  replayNotice,
  type TextSubject,
  wasReplayed,
} from '../shared/model-text.js';
import { publishedSchema } from '../shared/published-schema.js';
import { approvalElicit, invokeWithApproval } from './approval.js';
import { mcpCallAttributes } from './attributes.js';
import { requestInfo, withTransport } from './request.js';
import type {
  McpContentBlock,
  McpRequestInfo,
  McpResolver,
  McpServerLike,
  McpToolResult,
  RegisteredMcpTools,
  RegisterMcpToolOptions,
} from './types.js';

/** `_meta` key of successful results: how the value was obtained. */
export const MCP_CALL_META_KEY = 'tool-ledger/call';
/** `_meta` key of error results: the stable code and whether a retry can help. */
export const MCP_ERROR_META_KEY = 'tool-ledger/error';
/**
 * `params._meta` key under which a client or gateway may send the idempotency key instead of (or without) the
 * key argument, so keys need no change to the tool's schema.
 */
export const MCP_KEY_META_KEY = 'tool-ledger/idempotency-key';

const DEFAULT_KEY_FIELD = 'idempotency_key';
const JOB_ID_FIELD = 'job_id';
// Job ids are `job_<uuid>` (40 characters); anything much longer is not one, and is refused without a lookup.
const MAX_JOB_ID_LENGTH = 128;

/** Said to the model about the key argument; the wording is the contract for which key to send when. */
export function keyArgumentDescription(): string {
  return (
    'Idempotency key naming the intent of this request, for example a UUID you generate once for it. ' +
    'Same key = same intent: when retrying the same request (after a timeout or error), send the same key and ' +
    'you get the original result instead of the action running twice. ' +
    'A new or changed instruction is a new intent: generate a new key.'
  );
}

function replaySentence(field: string | false): string {
  const key = field === false ? 'idempotency key' : field;
  return `Replay-safe: a repeated call with the same ${key} returns the original result and does not repeat the action.`;
}

function defaultResult(report: InvokeReport<unknown>): McpToolResult {
  const text = report.value === undefined ? 'null' : JSON.stringify(report.value);
  return {
    content: [{ type: 'text', text }],
    ...(isRecord(report.value) ? { structuredContent: report.value } : {}),
  };
}

function callMeta(report: InvokeReport<unknown>): Record<string, unknown> {
  return {
    outcome: report.outcome,
    // A job poll did nothing again either.
    replayed: wasReplayed(report.outcome),
    ...(report.completedAt ? { completedAt: report.completedAt.toISOString() } : {}),
    ...(report.kind === 'read' ? {} : { attempt: report.attempt }),
    ...(report.jobId ? { jobId: report.jobId } : {}),
  };
}

/** A tool error result: text for the model, the stable code for programs. */
export function mcpErrorResult(
  error: ToolLedgerError,
  subject: TextSubject,
  options: { readonly structured: boolean } = { structured: true },
): McpToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: errorText(error, subject) }],
    // Clients check structuredContent against a tool's outputSchema even on errors (SDK 1.x does), so a tool
    // with one keeps the error to the text and _meta.
    ...(options.structured ? { structuredContent: { error: errorPayload(error) } } : {}),
    _meta: {
      [MCP_ERROR_META_KEY]: {
        code: error.code,
        retryable: error.retryable,
        ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
        ...(error instanceof ToolFailure ? { replayed: error.replayed } : {}),
      },
    },
  };
}

function jobNotFound(jobTool: string, statusTool: string, jobId: string): McpToolResult {
  const shown = jobId.length > 60 ? `${jobId.slice(0, 60)}…` : jobId;
  return {
    isError: true,
    content: [
      {
        type: 'text',
        text: `JOB_NOT_FOUND: there is no ${jobTool} job with ${JOB_ID_FIELD} "${shown}". Nothing was done. Call ${statusTool} again with the ${JOB_ID_FIELD} that ${jobTool} returned.`,
      },
    ],
    structuredContent: { error: { code: 'JOB_NOT_FOUND', message: 'No such job.', retryable: false } },
    _meta: { [MCP_ERROR_META_KEY]: { code: 'JOB_NOT_FOUND', retryable: false } },
  };
}

async function resolve(
  resolver: McpResolver | undefined,
  request: McpRequestInfo,
): Promise<string | undefined> {
  return resolver ? await resolver(request) : undefined;
}

/** The output validator's check, so `structuredContent` never breaks the `outputSchema` clients were given. */
async function checkOutput(tool: string, output: StandardSchemaV1, value: unknown): Promise<void> {
  const result = await output['~standard'].validate(value);
  if (result.issues) {
    throw new ToolLedgerError(
      'RESULT_INVALID',
      `Tool "${tool}" returned a value that does not match its output schema: ${result.issues.map((issue) => issue.message).join('; ')}.`,
      {
        issues: result.issues.map((issue) => ({
          message: issue.message,
          ...(issue.path ? { path: issue.path.map((part) => String(isRecord(part) ? part.key : part)) } : {}),
        })),
      },
    );
  }
}

/**
 * Registers a ledger tool on an `McpServer`, from `@modelcontextprotocol/server` 2.x or from
 * `@modelcontextprotocol/sdk` 1.x (the callback tells them apart by what the SDK hands it).
 *
 * Mutations and jobs get a required key argument, a replay sentence in their description and the annotations
 * `idempotentHint: true, readOnlyHint: false`; the key may also come in `params._meta["tool-ledger/idempotency-key"]`.
 * Read tools register as they are, with `readOnlyHint: true`. A replayed result starts with a sentence saying
 * so. Ledger errors come back as tool results with `isError: true`, text a model can act on, and the stable code
 * in `structuredContent.error.code` and `_meta["tool-ledger/error"].code`. Anything else the handler throws is
 * left to the SDK.
 */
export function registerMcpTool<TServer extends McpServerLike>(
  server: TServer,
  ledgerTool: AdapterTool,
  options: RegisterMcpToolOptions = {},
): RegisteredMcpTools<ReturnType<TServer['registerTool']>> {
  const kind = ledgerTool.kind;
  const keyField = kind === 'read' ? false : (options.keyField ?? DEFAULT_KEY_FIELD);
  const described = describeTool(ledgerTool, {
    name: options.name,
    description: options.description,
    inputJsonSchema: options.inputJsonSchema,
    hint: 'registerMcpTool(server, tool, { inputJsonSchema, keyField })',
    keyArgument:
      keyField === false
        ? undefined
        : { field: keyField, description: keyArgumentDescription(), required: true },
  });
  const name = described.name;
  const statusToolName = options.statusToolName ?? `${name}_status`;
  const formatResult = options.formatResult ?? defaultResult;
  const voice: KeyVoice =
    kind === 'read'
      ? { kind: 'none' }
      : keyField === false
        ? { kind: 'call' }
        : { kind: 'argument', field: keyField };
  const subject: TextSubject = { tool: name, kind, key: voice };
  const jobNames = { jobTool: name, statusTool: statusToolName, keyField: keyField || 'idempotency key' };
  const output = kind === 'job' ? undefined : options.output;
  const outputSchema =
    output === undefined && options.outputJsonSchema === undefined
      ? undefined
      : inputJsonSchema(
          name,
          output,
          options.outputJsonSchema,
          'registerMcpTool(server, tool, { outputJsonSchema })',
        );

  let description = described.description;
  if (kind === 'job') {
    description = appendSentence(
      description,
      `Starts a background job and returns its ${JOB_ID_FIELD}; ${statusToolName} reports its progress.`,
    );
  }
  if (kind !== 'read') description = appendSentence(description, replaySentence(keyField));

  // The SDK's own return type (RegisteredTool) for callers, from the structural call.
  const register = (...args: Parameters<McpServerLike['registerTool']>) =>
    server.registerTool(...args) as ReturnType<TServer['registerTool']>;

  const answer = async (report: InvokeReport<unknown>): Promise<McpToolResult> => {
    let result: McpToolResult;
    if (kind === 'job' && options.formatResult === undefined) {
      const status = report.value as JobStatus;
      result = {
        content: [{ type: 'text', text: jobText(status, jobNames) }],
        structuredContent: jobView(status),
      };
    } else {
      if (output) await checkOutput(name, output, report.value);
      result = formatResult(report);
    }
    const sentence = replayNotice(name, report);
    const notice: McpContentBlock[] = sentence === undefined ? [] : [{ type: 'text', text: sentence }];
    return {
      ...result,
      content: [...notice, ...result.content],
      _meta: { ...result._meta, [MCP_CALL_META_KEY]: callMeta(report) },
    };
  };

  const callback = markLedgerCallback(
    async (args: Record<string, unknown>, raw: unknown): Promise<McpToolResult> => {
      const request = withTransport(requestInfo(raw), server);
      try {
        const given = isRecord(args) ? args : {};
        let input: unknown = args;
        let key: unknown;
        if (kind !== 'read') {
          if (keyField !== false) {
            const { [keyField]: sent, ...rest } = given;
            key = sent;
            input = rest;
          }
          key ??= request._meta?.[MCP_KEY_META_KEY];
          boundedKey(key, name);
        }
        const context: CallContext = {
          key: key as string | undefined,
          tenant: await resolve(options.tenant, request),
          user: await resolve(options.user, request),
          signal: request.signal,
        };
        const asker = options.approvals && {
          ...options.approvals,
          elicit: approvalElicit(server, request, options.approvals.timeoutSeconds),
          approver: () => resolve(options.approvals?.approver, request),
        };
        const report = await withCallAttributes(
          mcpCallAttributes(request),
          () => invokeWithApproval(ledgerTool, input, context, asker),
          contextFromMeta(request._meta),
        );
        return await answer(report);
      } catch (error) {
        if (!(error instanceof ToolLedgerError)) throw error;
        return mcpErrorResult(error, subject, { structured: outputSchema === undefined });
      }
    },
  );

  const registered = register(
    name,
    {
      ...(described.title === undefined ? {} : { title: described.title }),
      ...(description === undefined ? {} : { description }),
      inputSchema: publishedSchema(described.schema),
      ...(outputSchema === undefined ? {} : { outputSchema: publishedSchema(outputSchema) }),
      annotations: {
        ...(described.title === undefined ? {} : { title: described.title }),
        readOnlyHint: kind === 'read',
        ...(kind === 'read' ? {} : { destructiveHint: ledgerTool.destructive, idempotentHint: true }),
        ...(options.openWorld === undefined ? {} : { openWorldHint: options.openWorld }),
      },
      _meta: { [MCP_CALL_META_KEY]: { kind } },
    },
    callback,
  );

  const statusTool =
    kind === 'job'
      ? registerStatusTool(server, register, ledgerTool, options, {
          name,
          statusToolName,
          title: described.title,
          jobNames,
        })
      : undefined;
  return { tool: registered, statusTool };
}

/** The read-only status tool beside a job tool: a job's status by its id, for the tenant and user it ran for. */
function registerStatusTool<T>(
  server: McpServerLike,
  register: (...args: Parameters<McpServerLike['registerTool']>) => T,
  ledgerTool: AdapterTool,
  options: RegisterMcpToolOptions,
  names: {
    readonly name: string;
    readonly statusToolName: string;
    readonly title: string | undefined;
    readonly jobNames: Parameters<typeof jobText>[1];
  },
): T {
  const { name, statusToolName, title, jobNames } = names;
  const statusSubject: TextSubject = { tool: statusToolName, kind: 'read', key: { kind: 'none' } };
  return register(
    statusToolName,
    {
      title: `${title ?? name} status`,
      description: `Reports the status of a ${name} job by its ${JOB_ID_FIELD}: running, succeeded (with its result), failed (with its error) or abandoned. Read-only.`,
      inputSchema: publishedSchema({
        type: 'object',
        properties: {
          [JOB_ID_FIELD]: {
            type: 'string',
            minLength: 1,
            maxLength: MAX_JOB_ID_LENGTH,
            description: `The ${JOB_ID_FIELD} ${name} returned.`,
          },
        },
        required: [JOB_ID_FIELD],
      }),
      annotations: { readOnlyHint: true },
    },
    async (args: Record<string, unknown>, raw: unknown): Promise<McpToolResult> => {
      const jobId = isRecord(args) ? args[JOB_ID_FIELD] : undefined;
      if (typeof jobId !== 'string' || jobId.length === 0) {
        return mcpErrorResult(
          new ToolLedgerError('INPUT_INVALID', `${JOB_ID_FIELD} must be a non-empty string.`, {
            issues: [{ message: 'expected a non-empty string', path: [JOB_ID_FIELD] }],
          }),
          statusSubject,
        );
      }
      if (jobId.length > MAX_JOB_ID_LENGTH) return jobNotFound(name, statusToolName, jobId);
      const request = withTransport(requestInfo(raw), server);
      try {
        // Another user's job reads as absent, like a job that does not exist.
        const lookup = {
          tenant: await resolve(options.tenant, request),
          user: await resolve(options.user, request),
        };
        const status = (await ledgerTool.getJob?.(jobId, lookup)) as JobStatus | undefined;
        if (status === undefined) return jobNotFound(name, statusToolName, jobId);
        return {
          content: [{ type: 'text', text: jobText(status, jobNames) }],
          structuredContent: jobView(status),
          _meta: { [MCP_CALL_META_KEY]: { outcome: 'executed', replayed: false, jobId: status.jobId } },
        };
      } catch (error) {
        if (error instanceof ToolLedgerError) return mcpErrorResult(error, statusSubject);
        throw error;
      }
    },
  );
}
