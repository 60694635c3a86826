import { ToolLedgerError } from '../contract/errors.js';
import type { Ledger } from '../create-ledger.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';
import { handleToolCall } from './call.js';
import { gatewayLedgerToolFor } from './ledger-tools.js';
import type { SessionShared } from './session.js';
import { type ListName, SharedUpstreamRelay } from './shared-relay.js';
import { ToolLookup } from './tool-lookup.js';
import type { CommandUpstream, GatewayIdentity, JsonRpcMessage, UrlUpstream } from './types.js';
import { connectUpstream, type UpstreamConnection } from './upstream-probe.js';

// The 2026-07-28 revision (sessionless Streamable HTTP, server discovery), served by @modelcontextprotocol/server
// (the SDK's 2.x line, an optional peer) beside the session-based revision of the 1.x transports. Each request is
// its own exchange: a fresh low-level Server per request whose handlers forward to one upstream connection the
// gateway shares across requests (opened at the first request, opened again if it goes), so no client holds a
// spawned server and any replica answers any request.

type ServerSdk = typeof import('@modelcontextprotocol/server');
type Handler = {
  fetch(request: Request, options?: { parsedBody?: unknown; authInfo?: unknown }): Promise<Response>;
  close(): Promise<void>;
  notify: { toolsChanged(): void; promptsChanged(): void; resourcesChanged(): void };
};
/** What a 2.x request handler is given, as far as the gateway uses it. */
type HandlerContext = {
  mcpReq: { notify(notification: { method: string; params?: Record<string, unknown> }): Promise<void> };
};

/**
 * Requests of the upstream's own on the shared connection: a ping is answered; sampling, elicitation and roots
 * cannot be asked of a client of this revision (they would have to become its `input_required` rounds, which end
 * the HTTP exchange while the upstream's call waits on this connection), so they are refused at once instead of
 * leaving the upstream to time out.
 */
function answerUpstreamRequest(message: JsonRpcMessage): JsonRpcMessage {
  const id = message.id as string | number;
  if (message.method === 'ping') return { jsonrpc: '2.0', id, result: {} };
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: -32601,
      message: `tool-ledger gateway: ${message.method} is not relayed to clients of the 2026-07-28 revision (sessionless: the gateway cannot ask the client mid-call).`,
    },
  };
}

async function loadServerSdk(): Promise<ServerSdk> {
  try {
    return (await import('@modelcontextprotocol/server')) as ServerSdk;
  } catch (error) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `Serving the 2026-07-28 revision needs @modelcontextprotocol/server (2.x) next to tool-ledger: npm install @modelcontextprotocol/server (${(error as Error).message}).`,
      { cause: error },
    );
  }
}

/** Methods relayed as they are to the shared upstream (tools are the gateway's own). */
const RELAYED = [
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'prompts/list',
  'prompts/get',
  'completion/complete',
] as const;

export interface ModernLeg {
  /** Whether this request is for the session-based revision (the 1.x transports serve it). */
  isLegacy(request: Request, parsedBody: unknown): Promise<boolean>;
  fetch(request: Request, parsedBody: unknown, identity: GatewayIdentity): Promise<Response>;
  close(): Promise<void>;
}

/**
 * The one upstream connection the sessionless requests share: opened at the first request, opened again by the
 * next one after it went. Requests of the upstream's own are answered (`answerUpstreamRequest`), its notifications
 * go to the relay, responses to the requests that wait for them.
 */
function sharedConnection(
  shared: SessionShared,
  upstream: CommandUpstream | UrlUpstream,
  relay: SharedUpstreamRelay,
): { connected(): Promise<UpstreamConnection>; close(): Promise<void> } {
  let connection: Promise<UpstreamConnection> | undefined;
  const connected = (): Promise<UpstreamConnection> => {
    connection ??= connectUpstream(upstream, shared.settings.upstreamConnectTimeoutMs, shared.log).then(
      (c) => {
        const take = c.transport.onmessage;
        c.transport.onmessage = (message, extra) => {
          if (message.id !== undefined && typeof message.method === 'string') {
            c.transport.send(answerUpstreamRequest(message)).catch(() => {});
          } else if (!relay.take(message)) take?.(message, extra);
        };
        const closed = c.transport.onclose;
        c.transport.onclose = () => {
          closed?.();
          // The next request opens a new one.
          connection = undefined;
        };
        return c;
      },
    );
    connection.catch(() => {
      connection = undefined;
    });
    return connection;
  };
  return {
    connected,
    async close() {
      const open = connection;
      connection = undefined;
      if (open) await (await open.catch(() => undefined))?.transport.close().catch(() => {});
    },
  };
}

export async function modernLeg(
  shared: SessionShared,
  upstream: CommandUpstream | UrlUpstream,
  identityKey: string,
): Promise<ModernLeg> {
  const sdk = await loadServerSdk();
  let handler: Handler | undefined;
  const relay = new SharedUpstreamRelay((list: ListName) => {
    // The annotations are read again, and clients listening through subscriptions/listen are told.
    if (list === 'tools') shared.catalog.invalidate();
    const notify = handler?.notify;
    if (list === 'tools') notify?.toolsChanged();
    else if (list === 'prompts') notify?.promptsChanged();
    else notify?.resourcesChanged();
  });
  const upstreamConnection = sharedConnection(shared, upstream, relay);
  const connected = upstreamConnection.connected;

  const build = async (identity: GatewayIdentity) => {
    const up = await connected();
    const init = up.initialized;
    const capabilities = isRecord(init.capabilities) ? init.capabilities : {};
    const info = isRecord(init.serverInfo) ? init.serverInfo : { name: 'upstream', version: '0' };
    const server = new sdk.Server(
      { name: String(info.name ?? 'upstream'), version: String(info.version ?? '0') },
      {
        capabilities: { ...capabilities, tools: isRecord(capabilities.tools) ? capabilities.tools : {} },
        ...(typeof init.instructions === 'string' ? { instructions: init.instructions } : {}),
      },
    );
    const lookup = new ToolLookup(shared.catalog, up.requests, shared.log);
    const forward = (method: string, params: unknown) =>
      up.requests.request(method, isRecord(params) ? params : {}, {
        timeoutMs: shared.settings.upstreamCallTimeoutMs,
      });
    const set = server.setRequestHandler.bind(server) as (
      method: string,
      handler: (request: { params?: unknown }, ctx: HandlerContext) => Promise<unknown>,
    ) => void;
    // Progress the upstream reports goes back on this request's own response stream (SSE).
    const withProgress = <T>(
      params: unknown,
      ctx: HandlerContext,
      run: (params: Record<string, unknown>) => Promise<T>,
    ): Promise<T> =>
      relay.withProgress(
        isRecord(params) ? params : {},
        (progress) => ctx.mcpReq.notify({ method: 'notifications/progress', params: progress }),
        run,
      );
    set('tools/list', async (request) => {
      const generation = shared.catalog.generation;
      return shared.catalog.rewriteList(await forward('tools/list', request.params), generation);
    });
    set('tools/call', async (request, ctx) => {
      const name = isRecord(request.params) ? request.params.name : undefined;
      if (typeof name !== 'string')
        throw new Error('tools/call needs params.name, the name of the tool to call.');
      const facts = await lookup.facts(name);
      const answer = await withProgress(request.params, ctx, (params) =>
        handleToolCall({
          params,
          facts,
          ledgerTool: (facts) => gatewayLedgerToolFor(shared.ledger as Ledger, facts),
          upstream: up.requests,
          identity,
          gate: shared.gate,
          keyField: shared.keyField,
          defaultTimeoutMs: shared.settings.upstreamCallTimeoutMs,
          // No session on this revision: the span carries the revision and no mcp.session.id.
          transport: {
            requestId: undefined,
            sessionId: undefined,
            protocolVersion: '2026-07-28',
            network: 'tcp',
          },
          signal: undefined,
        }),
      );
      if ('error' in answer)
        throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
      return answer.result;
    });
    const capabilityOf: Record<(typeof RELAYED)[number], string> = {
      'resources/list': 'resources',
      'resources/templates/list': 'resources',
      'resources/read': 'resources',
      'prompts/list': 'prompts',
      'prompts/get': 'prompts',
      'completion/complete': 'completions',
    };
    for (const method of RELAYED) {
      if (capabilities[capabilityOf[method]] === undefined) continue;
      set(method, async (request, ctx) =>
        withProgress(request.params, ctx, (params) => forward(method, params)),
      );
    }
    return server;
  };

  handler = sdk.createMcpHandler(
    async (ctx) => {
      const carried = (ctx.authInfo as { extra?: Record<string, unknown> } | undefined)?.extra?.[identityKey];
      return build(
        isRecord(carried) ? (carried as unknown as GatewayIdentity) : { tenant: undefined, user: undefined },
      );
    },
    {
      legacy: 'reject',
      maxRequestBodySize: shared.settings.maxRequestBytes,
      onerror: (error) => shared.log(`tool-ledger gateway: 2026-07-28 request: ${error.message}`),
    },
  ) as unknown as Handler;

  return {
    isLegacy: (request, parsedBody) =>
      sdk.isLegacyRequest(request, parsedBody, { maxRequestBodySize: shared.settings.maxRequestBytes }),
    fetch: (request, parsedBody, identity) =>
      handler.fetch(request, {
        parsedBody,
        authInfo: {
          token: '',
          clientId: identity.user ?? '',
          scopes: [],
          extra: { [identityKey]: identity },
        },
      }),
    async close() {
      await handler.close();
      await upstreamConnection.close();
    },
  };
}
