import type { LedgerOptions } from '../config/options.js';
import type { Ledger } from '../create-ledger.js';
import type { AccessRules } from './access.js';
import type { TenantLimits } from './tenant-limits.js';

/** A JSON-RPC message as MCP transports carry it; structural, so this module never loads an MCP SDK. */
export type JsonRpcMessage = {
  jsonrpc: '2.0';
  id?: string | number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
};

/** What the transport tells about an incoming message (the `extra` of SDK 1.x transports). */
export interface TransportExtra {
  readonly authInfo?: { readonly extra?: Record<string, unknown>; readonly [field: string]: unknown };
  readonly requestInfo?: { readonly headers?: Record<string, string | string[] | undefined> };
}

/** The transport interface both MCP SDK lines share (`Transport`), as far as the gateway uses it. */
export interface GatewayTransport {
  start(): Promise<void>;
  send(message: JsonRpcMessage, options?: { relatedRequestId?: string | number }): Promise<void>;
  close(): Promise<void>;
  onmessage?: ((message: JsonRpcMessage, extra?: TransportExtra) => void) | undefined;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  readonly sessionId?: string | undefined;
}

/** Per-tool settings, the tool options of `ledger.tool()` that apply to a tool the gateway did not write. */
export interface GatewayToolOptions {
  /**
   * `read` passes the tool through with telemetry only; `mutation` needs a key and goes through the ledger.
   * @default 'read' when the server annotates the tool `readOnlyHint: true`, otherwise 'mutation'
   */
  readonly kind?: 'read' | 'mutation';
  /**
   * Dotted paths of arguments left out of the parameter hash (a timestamp the client adds to every call).
   * @default []
   */
  readonly volatileFields?: readonly string[];
  /** How long a call is remembered. @default the ledger's ttlSeconds (86400) */
  readonly ttlSeconds?: number;
  /** How long a running call holds its key without renewal. @default the ledger's leaseSeconds (30) */
  readonly leaseSeconds?: number;
  /** How long a parallel duplicate waits for the first call before `IN_PROGRESS`. @default the ledger's waitSeconds (10) */
  readonly waitSeconds?: number;
  /**
   * What a retry does when an earlier attempt's outcome is unknown (the upstream died or timed out after the
   * request was sent): `'fail'` reports `OUTCOME_UNKNOWN` and leaves the row for an operator
   * (`tool-ledger resolve`); `'rerun'` sends the request again, for tools where a repeat is harmless.
   * @default 'fail'
   */
  readonly onUnknown?: 'rerun' | 'fail';
  /**
   * How long to wait for the upstream's answer to one call. Past it the outcome is unknown: the request was sent.
   * @default the gateway's upstreamCallTimeoutMs (60000 ms)
   */
  readonly timeoutSeconds?: number;
  /**
   * `'required'`: every call of this tool waits for a person's decision before it reaches the upstream (the
   * ledger's tool option `approval`). A client that declared elicitation is asked in a form; any other gets a
   * tool error naming the key that awaits approval (`tool-ledger approve`).
   * @default none
   */
  readonly approval?: 'required';
}

/** Who a call is made for, as the gateway resolved it from the transport (never from tool arguments). */
export interface GatewayIdentity {
  readonly tenant: string | undefined;
  readonly user: string | undefined;
  /** The caller's roles, from a verified token claim (access rules); undefined when no token names any. */
  readonly roles?: readonly string[] | undefined;
  /** The caller's groups, from a verified token claim (access rules); undefined when no token names any. */
  readonly groups?: readonly string[] | undefined;
}

/** A command the gateway spawns and speaks stdio to. */
export interface CommandUpstream {
  readonly command: string;
  readonly args?: readonly string[];
  /** @default the gateway's environment */
  readonly env?: Record<string, string>;
  readonly cwd?: string;
}

/** A Streamable HTTP server the gateway connects to. */
export interface UrlUpstream {
  readonly url: string | URL;
  /** Sent with every request to the upstream (for example its own `Authorization`); never the client's. */
  readonly headers?: Record<string, string>;
}

/** Options of `startGateway` and `createGateway`. */
export interface GatewayOptions {
  /** The MCP server the gateway stands in front of. */
  readonly upstream: CommandUpstream | UrlUpstream;
  /**
   * The ledger to record calls in, or the options to open one with (closed with the gateway).
   * @default {} (createLedger's defaults: DATABASE_URL, else an in-memory PGlite)
   */
  readonly ledger?: Ledger | LedgerOptions;
  /**
   * Tenant that scopes keys, for calls whose transport names none (stdio, or HTTP without tenant headers).
   * @default 'default'
   */
  readonly tenant?: string;
  /** End user for calls whose transport names none. @default undefined */
  readonly user?: string;
  /** Per-tool settings by tool name; they win over `defaults` and over the server's annotations. @default {} */
  readonly tools?: Readonly<Record<string, GatewayToolOptions>>;
  /** Settings for every tool not named in `tools`. @default {} */
  readonly defaults?: GatewayToolOptions;
  /**
   * Name of the key argument added to each mutating tool's input schema.
   * @default 'idempotency_key'
   */
  readonly keyField?: string;
  /**
   * Who may call which tool, by verified claims (roles, groups) and tenant; a refused call gets the tool error
   * `ACCESS_DENIED`. @default undefined (every caller may call every tool)
   */
  readonly access?: AccessRules;
  /**
   * Per-tenant rate and concurrency limits of this process (per replica); a call over them gets the retryable tool
   * error `RATE_LIMITED` with `retryAfterMs`. @default undefined (no limits)
   */
  readonly limits?: TenantLimits;
  /** Where diagnostics go (never stdout: in stdio mode stdout is the MCP channel). @default process.stderr */
  readonly log?: (line: string) => void;
}
