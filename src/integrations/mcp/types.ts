import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { InvokeReport } from '../../contract/types.js';

/** The request details the MCP SDK hands a tool callback: auth info, session id, abort signal. */
export type McpRequestExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Resolves a value from the MCP request; may be async (for example a session lookup). */
export type McpResolver = (extra: McpRequestExtra) => string | undefined | Promise<string | undefined>;

/** Options of `registerMcpTool`. */
export interface RegisterMcpToolOptions {
  /**
   * The tool name clients see.
   * @default the ledger tool's name
   */
  readonly name?: string;
  /**
   * The tool description. The replay sentence is appended to it for mutations and jobs.
   * @default the ledger tool's description
   */
  readonly description?: string;
  /**
   * Tenant that scopes idempotency keys, from the request (for example `authInfo.extra.tenantId`). On a server
   * that several tenants share, always set it: without it every caller shares the `default` tenant.
   * @default () => undefined (the ledger's `default` tenant)
   */
  readonly tenant?: McpResolver;
  /**
   * End user on whose behalf the call runs (for example `authInfo.clientId` or a subject claim). A key reused by
   * another user of the tenant is refused rather than replayed.
   * @default () => undefined
   */
  readonly user?: McpResolver;
  /**
   * Name of the key argument added to mutations and jobs.
   * @default 'idempotency_key'
   */
  readonly keyField?: string;
  /**
   * The input's JSON Schema, for input validators that cannot describe themselves (zod 3, valibot without
   * `@valibot/to-json-schema`). Must describe an object, and must not declare the key argument.
   * @default derived from the ledger tool's input schema
   */
  readonly inputJsonSchema?: Record<string, unknown>;
  /**
   * For jobs: the name of the companion read tool that reports a job's status.
   * @default `${name}_status`
   */
  readonly statusToolName?: string;
  /**
   * Turns a successful report into the tool result. The default puts the value as JSON text in `content`, and
   * in `structuredContent` when it is an object. The replay `_meta` is added to whatever this returns.
   * @default JSON text plus structuredContent
   */
  readonly formatResult?: (report: InvokeReport<unknown>) => CallToolResult;
  /**
   * Whether the tool interacts with an open world of external entities (MCP's `openWorldHint`).
   * @default undefined (not announced)
   */
  readonly openWorld?: boolean;
}

/** What `registerMcpTool` registered: the tool itself and, for jobs, its status tool. */
export interface RegisteredMcpTools<T> {
  readonly tool: T;
  readonly statusTool: T | undefined;
}
