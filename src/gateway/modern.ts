import { ToolLedgerError } from '../contract/errors.js';
import type { Ledger } from '../create-ledger.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';
import { handleToolCall } from './call.js';
import { gatewayLedgerToolFor } from './ledger-tools.js';
import type { SessionShared } from './session.js';
import { ToolLookup } from './tool-lookup.js';
import type { CommandUpstream, GatewayIdentity, UrlUpstream } from './types.js';
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
};

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

export async function modernLeg(
  shared: SessionShared,
  upstream: CommandUpstream | UrlUpstream,
  identityKey: string,
): Promise<ModernLeg> {
  const sdk = await loadServerSdk();
  let connection: Promise<UpstreamConnection> | undefined;
  const connected = (): Promise<UpstreamConnection> => {
    connection ??= connectUpstream(upstream, shared.settings.upstreamConnectTimeoutMs, shared.log).then(
      (c) => {
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
      handler: (request: { params?: unknown }, ctx: unknown) => Promise<unknown>,
    ) => void;
    set('tools/list', async (request) => {
      const generation = shared.catalog.generation;
      return shared.catalog.rewriteList(await forward('tools/list', request.params), generation);
    });
    set('tools/call', async (request) => {
      const params = isRecord(request.params) ? request.params : {};
      const name = params.name;
      if (typeof name !== 'string')
        throw new Error('tools/call needs params.name, the name of the tool to call.');
      const answer = await handleToolCall({
        params,
        facts: await lookup.facts(name),
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
      });
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
      set(method, async (request) => forward(method, request.params));
    }
    return server;
  };

  const handler = sdk.createMcpHandler(
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
      const open = connection;
      connection = undefined;
      if (open) await (await open.catch(() => undefined))?.transport.close().catch(() => {});
    },
  };
}
