import type { StandardSchemaV1 } from '@standard-schema/spec';
import type * as z from 'zod/v4-mini';
import type { InvokeReport } from '../../contract/types.js';
import type { McpApprovalSettings } from './approval.js';

/** The content blocks a tool result of either SDK line may carry. */
export type McpContentBlock =
  | { type: 'text'; text: string; _meta?: Record<string, unknown> }
  | { type: 'image'; data: string; mimeType: string; _meta?: Record<string, unknown> }
  | { type: 'audio'; data: string; mimeType: string; _meta?: Record<string, unknown> }
  | { type: 'resource_link'; uri: string; name: string; mimeType?: string; description?: string };

/**
 * A tool result as both SDK lines define it (`CallToolResult`). A type alias rather than an interface, so it
 * meets the SDKs' index-signature result types.
 */
export type McpToolResult = {
  content: McpContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
};

/** What `registerMcpTool` passes to `registerTool`: the part of its config both SDK lines share. */
export interface McpToolConfig {
  title?: string;
  description?: string;
  inputSchema: z.ZodMiniObject;
  outputSchema?: z.ZodMiniObject;
  annotations?: {
    title?: string;
    readOnlyHint?: boolean;
    destructiveHint?: boolean;
    idempotentHint?: boolean;
    openWorldHint?: boolean;
  };
  _meta?: Record<string, unknown>;
}

/**
 * The `McpServer` of either SDK line: `@modelcontextprotocol/sdk` 1.x or `@modelcontextprotocol/server` 2.x.
 * Structural, so this module loads neither and users bring the version they have. The callback's second
 * argument is the SDK's `extra` (1.x) or `ctx` (2.x).
 */
export interface McpServerLike {
  registerTool(
    name: string,
    config: McpToolConfig,
    callback: (args: Record<string, unknown>, extra: unknown) => Promise<McpToolResult>,
  ): unknown;
}

/** The validated access token the transport attached to the request (HTTP transports with auth). */
export interface McpAuthInfo {
  readonly token?: string;
  readonly clientId?: string;
  readonly scopes?: readonly string[];
  readonly extra?: Record<string, unknown>;
  readonly [field: string]: unknown;
}

/**
 * One `tools/call` request, the same for both SDK lines. `raw` is what the SDK handed the tool: `extra` (1.x) or
 * `ctx` (2.x), for anything else a resolver needs.
 */
export interface McpRequestInfo {
  /** The SDK line that delivered the call. */
  readonly sdk: 1 | 2;
  /** The transport session (1.x HTTP transports; 2026-07-28 has no sessions). */
  readonly sessionId: string | undefined;
  /** The JSON-RPC id of this message. A retry gets a new one, so it never names an intent. */
  readonly requestId: string | number | undefined;
  readonly authInfo: McpAuthInfo | undefined;
  /** The request's `params._meta`. */
  readonly _meta: Record<string, unknown> | undefined;
  readonly signal: AbortSignal | undefined;
  /** The negotiated protocol revision, when the SDK tells the tool. */
  readonly protocolVersion: string | undefined;
  /** `pipe` for stdio, `tcp` for HTTP transports, as `network.transport` names them. */
  readonly transport: 'pipe' | 'tcp' | undefined;
  readonly raw: unknown;
}

/** @deprecated The name from 1.x-only releases; a resolver now receives `McpRequestInfo`. */
export type McpRequestExtra = McpRequestInfo;

/** Resolves a value from the MCP request; may be async (for example a session lookup). */
export type McpResolver = (request: McpRequestInfo) => string | undefined | Promise<string | undefined>;

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
   * Name of the key argument added to mutations and jobs, or `false` to publish none, when every client (or a
   * gateway in front of the server) sends the key in `params._meta["tool-ledger/idempotency-key"]` instead.
   * With an argument, that `_meta` key is still accepted when the argument is missing.
   * @default 'idempotency_key'
   */
  readonly keyField?: string | false;
  /**
   * The input's JSON Schema, for input validators that cannot describe themselves (zod 3, valibot without
   * `@valibot/to-json-schema`). Must describe an object, and must not declare the key argument.
   * @default derived from the ledger tool's input schema
   */
  readonly inputJsonSchema?: Record<string, unknown>;
  /**
   * A Standard Schema validator of the tool's value. When set, the tool publishes it as `outputSchema`, and
   * every value is checked against it before it goes out as `structuredContent`: a value that does not match is
   * an error result (`RESULT_INVALID`), never content that breaks the published contract.
   * @default none (no outputSchema)
   */
  readonly output?: StandardSchemaV1;
  /**
   * The output's JSON Schema, for output validators that cannot describe themselves. Must describe an object.
   * @default derived from `output`
   */
  readonly outputJsonSchema?: Record<string, unknown>;
  /**
   * For jobs: the name of the companion read tool that reports a job's status.
   * @default `${name}_status`
   */
  readonly statusToolName?: string;
  /**
   * Turns a successful report into the tool result. The default puts the value as JSON text in `content`, and
   * in `structuredContent` when it is an object. The replay sentence and `_meta` are added to whatever this
   * returns.
   * @default JSON text plus structuredContent
   */
  readonly formatResult?: (report: InvokeReport<unknown>) => McpToolResult;
  /**
   * Whether the tool interacts with an open world of external entities (MCP's `openWorldHint`).
   * @default undefined (not announced)
   */
  readonly openWorld?: boolean;
  /**
   * For a ledger tool with `approval`: the ledger that records decisions and how to ask for them. When the client
   * declared form-mode elicitation (and the server runs on `@modelcontextprotocol/sdk` 1.x), a call that awaits
   * approval asks the person at the client to approve or decline, with the arguments scrubbed as telemetry
   * scrubs them; the decision goes to the ledger, and an approved call then runs. Otherwise, or without this
   * option, the call answers a tool error (`APPROVAL_REQUIRED`) naming the key that awaits a decision.
   * @default none (no elicitation)
   */
  readonly approvals?: McpApprovalOptions;
}

/** How a tool with `approval` asks the person at the client for the decision (`registerMcpTool`'s `approvals`). */
export interface McpApprovalOptions extends McpApprovalSettings {
  /**
   * Who decides, for the ledger's audit.
   * @default the call's user, else "MCP client <name>" with the name the client declared at initialize
   */
  readonly approver?: McpResolver;
  /** How long to wait for the person's answer before the call answers that it awaits approval. @default 600 */
  readonly timeoutSeconds?: number;
}

/** What `registerMcpTool` registered: the tool itself and, for jobs, its status tool. */
export interface RegisteredMcpTools<T> {
  readonly tool: T;
  readonly statusTool: T | undefined;
}
