import type { Attributes } from '@opentelemetry/api';

/**
 * MCP, JSON-RPC and network attribute names from the OpenTelemetry semantic conventions for MCP
 * (experimental), copied as literals so the incubating entry point is never imported at runtime.
 */
export const MCP_ATTR = {
  METHOD_NAME: 'mcp.method.name',
  SESSION_ID: 'mcp.session.id',
  PROTOCOL_VERSION: 'mcp.protocol.version',
  JSONRPC_REQUEST_ID: 'jsonrpc.request.id',
  NETWORK_TRANSPORT: 'network.transport',
} as const;

export const MCP_METHOD_TOOLS_CALL = 'tools/call' as const;

/** The request fields the attributes come from; structural, so this module never loads an MCP SDK. */
export interface McpRequestIds {
  readonly sessionId?: string | undefined;
  readonly requestId?: string | number | undefined;
  readonly protocolVersion?: string | undefined;
  readonly transport?: string | undefined;
}

/**
 * The first revision without protocol sessions. From it on the MCP conventions leave `mcp.session.id` out: a
 * request stands alone, and whatever id a transport still carries does not name a protocol session.
 */
export const STATELESS_PROTOCOL_VERSION = '2026-07-28';

/** True for a revision older than 2026-07-28 (revisions are dates, so they compare as strings); unknown counts as old. */
export function hasProtocolSessions(protocolVersion: string | undefined): boolean {
  return protocolVersion === undefined || protocolVersion < STATELESS_PROTOCOL_VERSION;
}

export function mcpCallAttributes(request: McpRequestIds | undefined): Attributes {
  const attributes: Attributes = { [MCP_ATTR.METHOD_NAME]: MCP_METHOD_TOOLS_CALL };
  if (request?.sessionId && hasProtocolSessions(request.protocolVersion)) {
    attributes[MCP_ATTR.SESSION_ID] = request.sessionId;
  }
  if (request?.requestId !== undefined) attributes[MCP_ATTR.JSONRPC_REQUEST_ID] = String(request.requestId);
  if (request?.protocolVersion) attributes[MCP_ATTR.PROTOCOL_VERSION] = request.protocolVersion;
  if (request?.transport) attributes[MCP_ATTR.NETWORK_TRANSPORT] = request.transport;
  return attributes;
}
