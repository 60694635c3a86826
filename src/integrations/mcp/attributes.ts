import type { Attributes } from '@opentelemetry/api';

/**
 * MCP and JSON-RPC attribute names from the OpenTelemetry semantic conventions for MCP (experimental), copied
 * as literals so the incubating entry point is never imported at runtime.
 */
export const MCP_ATTR = {
  METHOD_NAME: 'mcp.method.name',
  SESSION_ID: 'mcp.session.id',
  JSONRPC_REQUEST_ID: 'jsonrpc.request.id',
} as const;

export const MCP_METHOD_TOOLS_CALL = 'tools/call' as const;

/** The request fields the attributes come from; structural, so this module never loads the MCP SDK. */
export interface McpRequestIds {
  readonly sessionId?: string | undefined;
  readonly requestId?: string | number | undefined;
}

export function mcpCallAttributes(extra: McpRequestIds | undefined): Attributes {
  const attributes: Attributes = { [MCP_ATTR.METHOD_NAME]: MCP_METHOD_TOOLS_CALL };
  if (typeof extra?.sessionId === 'string' && extra.sessionId)
    attributes[MCP_ATTR.SESSION_ID] = extra.sessionId;
  if (extra?.requestId !== undefined) attributes[MCP_ATTR.JSONRPC_REQUEST_ID] = String(extra.requestId);
  return attributes;
}
