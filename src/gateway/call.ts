import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type Attributes,
  context,
  type Link,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { ToolFailure, ToolLedgerError } from '../contract/errors.js';
import type { CallContext, InvokeReport } from '../contract/types.js';
import type { Ledger } from '../create-ledger.js';
import { type ApprovalAsker, invokeWithApproval } from '../integrations/mcp/approval.js';
import { MCP_ATTR } from '../integrations/mcp/attributes.js';
import { MCP_CALL_META_KEY, MCP_KEY_META_KEY, mcpErrorResult } from '../integrations/mcp/register.js';
import { boundedKey, isRecord } from '../integrations/shared/adapter-tool.js';
import { contextFromMeta, withCallAttributes } from '../integrations/shared/call-attributes.js';
import { replayNotice, type TextSubject, wasReplayed } from '../integrations/shared/model-text.js';
import type { LedgerTool } from '../middleware/tool.js';
import type { ToolFacts } from './catalog.js';
import type { Gate } from './gate.js';
import type { GatewayIdentity } from './types.js';
import { NotSentError, type UpstreamRequests } from './upstream.js';

/** `reason` of the ToolFailure that carries an upstream result with `isError: true` through the ledger. */
export const UPSTREAM_TOOL_ERROR = 'upstream_tool_error';

const TRACER_NAME = 'tool-ledger-gateway';

type ToolResult = Record<string, unknown> & { content?: unknown[] };

/** What one forwarded call needs besides its arguments; handed to the ledger handler through the async context. */
interface ForwardedCall {
  readonly upstream: UpstreamRequests;
  readonly params: Record<string, unknown>;
  readonly meta: Record<string, unknown> | undefined;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
}

const forwardedCalls = new AsyncLocalStorage<ForwardedCall>();

/** The transport facts a call's spans carry. */
export interface CallTransport {
  readonly requestId: string | number | undefined;
  readonly sessionId: string | undefined;
  readonly protocolVersion: string | undefined;
  readonly network: 'pipe' | 'tcp';
}

function firstText(result: ToolResult): string {
  const block = Array.isArray(result.content)
    ? result.content.find((item) => isRecord(item) && item.type === 'text')
    : undefined;
  const text = isRecord(block) && typeof block.text === 'string' ? block.text.trim() : '';
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

/** Sends the call upstream inside a client span, whose context the upstream continues through `_meta`. */
async function forward(name: string, input: unknown, call: ForwardedCall): Promise<ToolResult> {
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(
    `tools/call ${name}`,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        [MCP_ATTR.METHOD_NAME]: 'tools/call',
        'gen_ai.tool.name': name,
        'gen_ai.operation.name': 'execute_tool',
      },
    },
    async (span) => {
      try {
        const meta: Record<string, unknown> = { ...call.meta };
        delete meta[MCP_KEY_META_KEY];
        // The upstream continues this span's trace; without a tracing SDK nothing is injected, and the client's
        // own trace context passes on as it came.
        const carrier: Record<string, string> = {};
        propagation.inject(context.active(), carrier);
        if (carrier.traceparent !== undefined) {
          delete meta.tracestate;
          Object.assign(meta, carrier);
        }
        // Everything else in params (task, future fields) passes on as the client sent it.
        const params: Record<string, unknown> = { ...call.params, arguments: input, _meta: meta };
        if (input === undefined) delete params.arguments;
        if (Object.keys(meta).length === 0) delete params._meta;
        const result = (await call.upstream.request('tools/call', params, {
          timeoutMs: call.timeoutMs,
          signal: call.signal,
        })) as ToolResult;
        if (result.isError === true) {
          span.setAttribute('error.type', 'tool_error');
          span.setStatus({ code: SpanStatusCode.ERROR, message: firstText(result) });
        }
        return result;
      } catch (error) {
        span.setAttribute('error.type', error instanceof Error ? error.name : '_OTHER');
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** One upstream tool as a ledger tool: its handler forwards the call, and an `isError` result is a final failure. */
export function gatewayLedgerTool(ledger: Ledger, facts: ToolFacts): LedgerTool<unknown, unknown> {
  const { options } = facts;
  return ledger.tool({
    name: facts.name,
    kind: 'mutation',
    destructive: facts.destructive,
    ...(options.volatileFields ? { volatileFields: options.volatileFields } : {}),
    ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds }),
    ...(options.leaseSeconds === undefined ? {} : { leaseSeconds: options.leaseSeconds }),
    ...(options.waitSeconds === undefined ? {} : { waitSeconds: options.waitSeconds }),
    onUnknown: options.onUnknown ?? 'fail',
    ...(options.approval === undefined ? {} : { approval: options.approval }),
    handler: async (input: unknown) => {
      const call = forwardedCalls.getStore();
      if (call === undefined) {
        throw new ToolLedgerError('CONFIG_INVALID', `Tool "${facts.name}" was called outside the gateway.`);
      }
      let result: ToolResult;
      try {
        result = await forward(facts.name, input, call);
      } catch (error) {
        if (error instanceof NotSentError) {
          // Nothing reached the upstream: not final, so the same key may run it again.
          throw new ToolFailure(error.message, {
            final: false,
            reason: 'upstream_unreachable',
            cause: error,
          });
        }
        throw error;
      }
      if (result.isError === true) {
        // The server's own answer: final, stored and replayed exactly.
        throw new ToolFailure(firstText(result) || `${facts.name} reported an error.`, {
          final: true,
          reason: UPSTREAM_TOOL_ERROR,
          details: { result },
        });
      }
      return result;
    },
  }) as unknown as LedgerTool<unknown, unknown>;
}

function withNotice(
  name: string,
  result: ToolResult,
  report: Pick<InvokeReport<unknown>, 'outcome' | 'kind' | 'completedAt'>,
): ToolResult {
  const notice = replayNotice(name, report);
  const content = Array.isArray(result.content) ? result.content : [];
  return {
    ...result,
    content: notice === undefined ? content : [{ type: 'text', text: notice }, ...content],
  };
}

function callMeta(report: InvokeReport<unknown>): Record<string, unknown> {
  return {
    outcome: report.outcome,
    replayed: wasReplayed(report.outcome),
    ...(report.completedAt ? { completedAt: report.completedAt.toISOString() } : {}),
    attempt: report.attempt,
  };
}

/** What the gateway answers a `tools/call` with: a result, or a JSON-RPC error passed on from the upstream. */
export type CallAnswer =
  | { readonly result: Record<string, unknown> }
  | { readonly error: { code: number; message: string; data?: unknown } };

export interface CallRequest {
  readonly params: Record<string, unknown>;
  readonly facts: ToolFacts;
  readonly ledgerTool: (facts: ToolFacts) => LedgerTool<unknown, unknown>;
  readonly upstream: UpstreamRequests;
  readonly identity: GatewayIdentity;
  /** Admits the call (access rules, tenant limits) before it goes anywhere. */
  readonly gate: Gate;
  readonly keyField: string;
  /** The wait for the upstream's answer when the tool sets no `timeoutSeconds` (the gateway's settings). */
  readonly defaultTimeoutMs: number;
  readonly transport: CallTransport;
  readonly signal: AbortSignal | undefined;
  /** How a call that awaits approval asks the client for the decision (set when it declared form elicitation). */
  readonly approval?: ApprovalAsker | undefined;
}

function spanAttributes(name: string, transport: CallTransport): Attributes {
  return {
    [MCP_ATTR.METHOD_NAME]: 'tools/call',
    'gen_ai.tool.name': name,
    'gen_ai.operation.name': 'execute_tool',
    [MCP_ATTR.NETWORK_TRANSPORT]: transport.network,
    ...(transport.requestId === undefined
      ? {}
      : { [MCP_ATTR.JSONRPC_REQUEST_ID]: String(transport.requestId) }),
    ...(transport.sessionId ? { [MCP_ATTR.SESSION_ID]: transport.sessionId } : {}),
    ...(transport.protocolVersion ? { [MCP_ATTR.PROTOCOL_VERSION]: transport.protocolVersion } : {}),
  };
}

/** Answers one `tools/call`: read-only tools pass through, mutating ones go through the ledger. */
export async function handleToolCall(request: CallRequest): Promise<CallAnswer> {
  const { params, facts } = request;
  const name = facts.name;
  const meta = isRecord(params._meta) ? params._meta : undefined;
  const parent = contextFromMeta(meta);
  const tracer = trace.getTracer(TRACER_NAME);
  const span = tracer.startSpan(
    `tools/call ${name}`,
    { kind: SpanKind.SERVER, attributes: spanAttributes(name, request.transport) },
    parent,
  );
  const admission = request.gate.admit(name, request.identity, span);
  try {
    const answer = admission.admitted
      ? await context.with(trace.setSpan(parent, span), () => answerCall(request, meta, span))
      : {
          result: mcpErrorResult(admission.error, subjectOf(request), { structured: !facts.hasOutputSchema }),
        };
    if ('error' in answer) {
      span.setAttribute('error.type', String(answer.error.code));
      span.setStatus({ code: SpanStatusCode.ERROR, message: answer.error.message });
    } else if (answer.result.isError === true) {
      span.setAttribute('error.type', 'tool_error');
      span.setStatus({ code: SpanStatusCode.ERROR });
    }
    return answer;
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    if (admission.admitted) admission.release();
    span.end();
  }
}

/** How the model hears this call's tool and key in an error text. */
function subjectOf(request: CallRequest): TextSubject {
  const { facts, keyField } = request;
  return {
    tool: facts.name,
    kind: facts.kind === 'read' ? 'read' : 'mutation',
    key:
      facts.kind === 'read'
        ? { kind: 'none' }
        : facts.keyArgument
          ? { kind: 'argument', field: keyField }
          : { kind: 'call' },
  };
}

async function answerCall(
  request: CallRequest,
  meta: Record<string, unknown> | undefined,
  span: Span,
): Promise<CallAnswer> {
  const { params, facts, keyField } = request;
  const name = facts.name;
  const args = isRecord(params.arguments) ? params.arguments : {};
  const forwarded: ForwardedCall = {
    upstream: request.upstream,
    params,
    meta,
    timeoutMs:
      facts.options.timeoutSeconds === undefined
        ? request.defaultTimeoutMs
        : facts.options.timeoutSeconds * 1000,
    signal: request.signal,
  };
  if (facts.kind === 'read') {
    try {
      // Read-only calls go on with their arguments exactly as sent.
      return { result: await forward(name, params.arguments, forwarded) };
    } catch (error) {
      return upstreamFailure(error, name);
    }
  }
  const subject = subjectOf(request);
  let input: Record<string, unknown> = args;
  let key: unknown;
  if (facts.keyArgument) {
    const { [keyField]: sent, ...rest } = args;
    key = sent;
    input = rest;
  }
  key ??= meta?.[MCP_KEY_META_KEY];
  const structured = !facts.hasOutputSchema;
  try {
    boundedKey(key, name);
    const tool = request.ledgerTool(facts);
    // A call that awaits a person's decision asks the client when it can be asked (see ClientApprovals).
    const gated = {
      name,
      invoke: (given: unknown, context: CallContext) =>
        withCallAttributes(spanAttributes(name, request.transport), () =>
          forwardedCalls.run(forwarded, () => tool.invoke(given, context)),
        ),
    };
    const report = await invokeWithApproval(
      gated,
      input,
      {
        key: key as string,
        tenant: request.identity.tenant,
        user: request.identity.user,
        signal: request.signal,
      },
      request.approval,
    );
    linkOriginal(span, report.originalSpan);
    const value = isRecord(report.value) ? (report.value as ToolResult) : { content: [] };
    const result = withNotice(name, value, report);
    return {
      result: {
        ...result,
        _meta: { ...(isRecord(result._meta) ? result._meta : {}), [MCP_CALL_META_KEY]: callMeta(report) },
      },
    };
  } catch (error) {
    if (error instanceof ToolFailure && error.reason === UPSTREAM_TOOL_ERROR) {
      const stored = isRecord(error.details) ? error.details.result : undefined;
      if (isRecord(stored)) {
        const report = {
          outcome: error.replayed ? 'replayed' : 'executed',
          kind: 'mutation',
          completedAt: undefined,
        } as const;
        const result = withNotice(name, stored as ToolResult, report);
        return {
          result: {
            ...result,
            _meta: {
              ...(isRecord(result._meta) ? result._meta : {}),
              [MCP_CALL_META_KEY]: { outcome: report.outcome, replayed: error.replayed },
            },
          },
        };
      }
    }
    if (error instanceof ToolLedgerError) return { result: mcpErrorResult(error, subject, { structured }) };
    return upstreamFailure(error, name);
  }
}

function upstreamFailure(error: unknown, name: string): CallAnswer {
  if (error instanceof Error && error.name === 'UpstreamRpcError') {
    return {
      error: (error as unknown as { error: { code: number; message: string; data?: unknown } }).error,
    };
  }
  return {
    error: {
      code: -32603,
      message: `tool-ledger gateway: ${name} could not be called upstream: ${error instanceof Error ? error.message : String(error)}`,
    },
  };
}

function linkOriginal(span: Span, original: InvokeReport<unknown>['originalSpan']): void {
  if (original === undefined || typeof span.addLink !== 'function') return;
  const link: Link = {
    context: { traceId: original.traceId, spanId: original.spanId, traceFlags: 1, isRemote: true },
    attributes: { 'tool_ledger.link.type': 'original_execution' },
  };
  span.addLink(link);
}
