import { isRecord } from '../shared/adapter-tool.js';
import type { McpAuthInfo, McpRequestInfo } from './types.js';

/** Where the 2026-07-28 revision carries the protocol version in every request's `_meta` envelope. */
const PROTOCOL_VERSION_META = 'io.modelcontextprotocol/protocolVersion';

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= 256 ? value : undefined;
}

function requestId(value: unknown): string | number | undefined {
  if (typeof value === 'number') return value;
  return text(value);
}

function header(headers: unknown, name: string): string | undefined {
  if (!isRecord(headers)) return undefined;
  const value = headers[name];
  return text(Array.isArray(value) ? value[0] : value);
}

/**
 * The SDK's second callback argument as one shape: `extra` from `@modelcontextprotocol/sdk` 1.x, or `ctx` from
 * `@modelcontextprotocol/server` 2.x (told apart by its `mcpReq`). Strings longer than any id are dropped, so a
 * client cannot push megabytes into span attributes or resolvers.
 */
export function requestInfo(raw: unknown): McpRequestInfo {
  const given = isRecord(raw) ? raw : {};
  if (isRecord(given.mcpReq)) {
    const req = given.mcpReq;
    const http = isRecord(given.http) ? given.http : undefined;
    const envelope = isRecord(req.envelope) ? req.envelope : undefined;
    return {
      sdk: 2,
      sessionId: text(given.sessionId),
      requestId: requestId(req.id),
      authInfo: isRecord(http?.authInfo) ? (http.authInfo as McpAuthInfo) : undefined,
      _meta: isRecord(req._meta) ? req._meta : undefined,
      signal: req.signal instanceof AbortSignal ? req.signal : undefined,
      protocolVersion:
        text(envelope?.[PROTOCOL_VERSION_META]) ??
        (http?.req instanceof Request ? text(http.req.headers.get('mcp-protocol-version')) : undefined),
      transport: http ? 'tcp' : undefined,
      raw,
    };
  }
  const info = isRecord(given.requestInfo) ? given.requestInfo : undefined;
  return {
    sdk: 1,
    sessionId: text(given.sessionId),
    requestId: requestId(given.requestId),
    authInfo: isRecord(given.authInfo) ? (given.authInfo as McpAuthInfo) : undefined,
    _meta: isRecord(given._meta) ? given._meta : undefined,
    signal: given.signal instanceof AbortSignal ? given.signal : undefined,
    protocolVersion: header(info?.headers, 'mcp-protocol-version'),
    // 1.x hands HTTP transports' requests their headers; others come without (see `withTransport`).
    transport: info ? 'tcp' : undefined,
    raw,
  };
}

/** Fills in `pipe` for a server connected over stdio, which neither SDK line tells the tool. */
export function withTransport(info: McpRequestInfo, server: unknown): McpRequestInfo {
  if (info.transport !== undefined) return info;
  const transport = (server as { server?: { transport?: { constructor?: { name?: unknown } } } }).server
    ?.transport;
  const name = transport?.constructor?.name;
  return typeof name === 'string' && name.startsWith('Stdio') ? { ...info, transport: 'pipe' } : info;
}
