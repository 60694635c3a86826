/**
 * The names `ToolLedgerMcpInstrumentation` emits from the OpenTelemetry MCP semantic conventions (experimental,
 * now maintained with the GenAI conventions). Copied as literals, never imported from the incubating semconv
 * entry point, whose names may change in any minor release. Documented in docs/integrations.md.
 */
import { MCP_ATTR, MCP_METHOD_TOOLS_CALL } from '../mcp/attributes.js';

export { MCP_ATTR, MCP_METHOD_TOOLS_CALL };

export const MCP_INSTRUMENTATION_ATTR = {
  ...MCP_ATTR,
  GEN_AI_TOOL_NAME: 'gen_ai.tool.name',
  GEN_AI_OPERATION_NAME: 'gen_ai.operation.name',
  ERROR_TYPE: 'error.type',
} as const;

/** Server spans are named `{mcp.method.name} {target}`; the target of `tools/call` is the tool name. */
export const SERVER_SPAN_NAME_PREFIX = MCP_METHOD_TOOLS_CALL;

export const MCP_METRIC = {
  SERVER_OPERATION_DURATION: 'mcp.server.operation.duration',
} as const;

/** `error.type` of a tool result with `isError: true`, as the MCP conventions name it. */
export const ERROR_TYPE_TOOL_ERROR = 'tool_error' as const;
/** `error.type` of a thrown value without a usable class name (the general convention's fallback). */
export const ERROR_TYPE_OTHER = '_OTHER' as const;

/** Bucket advice the MCP conventions give `mcp.server.operation.duration`, in seconds. */
export const MCP_DURATION_BUCKETS_SECONDS = [
  0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300,
] as const;
