import { ToolLedgerError } from '../contract/errors.js';
import { isCommand, upstreamTransport } from './sdk.js';
import type { CommandUpstream, GatewayTransport, UrlUpstream } from './types.js';
import { UpstreamRequests } from './upstream.js';

/** The revision the gateway's own connections to the upstream ask for; the upstream may answer an older one. */
export const UPSTREAM_PROTOCOL_VERSION = '2025-06-18';
export const GATEWAY_CLIENT_INFO = Object.freeze({ name: 'tool-ledger-gateway', version: '1' });

/** Why the upstream cannot be used, in words an operator acts on. */
function startFailure(upstream: CommandUpstream | UrlUpstream, error: unknown): ToolLedgerError {
  const why = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | undefined)?.code;
  if (isCommand(upstream)) {
    const hint =
      code === 'ENOENT'
        ? 'It was not found: check the command after --, that it is installed, and that it is on PATH.'
        : code === 'EACCES'
          ? 'It is not executable by this user.'
          : 'Check the command after -- by running it on its own.';
    return new ToolLedgerError(
      'CONFIG_INVALID',
      `The upstream MCP server "${upstream.command}" could not be started (${why}). ${hint}`,
      { cause: error },
    );
  }
  return new ToolLedgerError(
    'CONFIG_INVALID',
    `The upstream MCP server at ${String(upstream.url)} did not answer (${why}). Check --upstream and that the server runs.`,
    { cause: error },
  );
}

/** An initialized connection of the gateway's own to the upstream. */
export interface UpstreamConnection {
  readonly transport: GatewayTransport & { readonly pid?: number | null };
  readonly requests: UpstreamRequests;
  /** The upstream's `initialize` answer (its capabilities, server info and negotiated revision). */
  readonly initialized: Record<string, unknown>;
}

/**
 * Opens a connection to the upstream and initializes it within `timeoutMs`; a command that cannot be spawned, or
 * exits or stays silent before it answers, is a `CONFIG_INVALID` error that says what to fix.
 */
export async function connectUpstream(
  upstream: CommandUpstream | UrlUpstream,
  timeoutMs: number,
  log: (line: string) => void,
): Promise<UpstreamConnection> {
  const transport = await upstreamTransport(upstream);
  const requests = new UpstreamRequests(transport, log);
  transport.onmessage = (message) => void requests.take(message);
  let exited: ((error: Error) => void) | undefined;
  const gone = new Promise<never>((_, reject) => {
    exited = reject;
  });
  gone.catch(() => {});
  transport.onclose = () => {
    requests.closeAll();
    exited?.(new Error('it exited before it answered initialize'));
  };
  try {
    await transport.start();
    const initialized = await Promise.race([
      requests.request(
        'initialize',
        { protocolVersion: UPSTREAM_PROTOCOL_VERSION, capabilities: {}, clientInfo: GATEWAY_CLIENT_INFO },
        { timeoutMs },
      ),
      gone,
    ]);
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    transport.onclose = () => requests.closeAll();
    return { transport, requests, initialized };
  } catch (error) {
    await transport.close().catch(() => {});
    throw startFailure(upstream, error);
  } finally {
    exited = undefined;
  }
}

/**
 * Whether an HTTP upstream answers at all: any HTTP answer under 500 (even a refusal of a request without a
 * session) shows a server there. Leaves no session behind, and no pooled connection either: a kept-alive socket
 * the server later times out would fail the first request of the SDK's transport ("fetch failed").
 */
export async function urlUpstreamAnswers(upstream: UrlUpstream, timeoutMs: number): Promise<boolean> {
  const url = new URL(String(upstream.url));
  const { request } = url.protocol === 'https:' ? await import('node:https') : await import('node:http');
  const body = JSON.stringify({ jsonrpc: '2.0', id: 'tool-ledger-gateway-probe', method: 'ping' });
  return new Promise<boolean>((resolve) => {
    const req = request(
      url,
      {
        method: 'POST',
        agent: false,
        timeout: timeoutMs,
        headers: {
          ...upstream.headers,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          connection: 'close',
        },
      },
      (res) => {
        res.resume();
        resolve((res.statusCode ?? 500) < 500);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve(false));
    req.end(body);
  });
}

/** Starts a transport, turning a spawn failure into the same operator-facing error as `connectUpstream`. */
export async function startUpstream(
  upstream: CommandUpstream | UrlUpstream,
  transport: GatewayTransport,
): Promise<void> {
  try {
    await transport.start();
  } catch (error) {
    throw startFailure(upstream, error);
  }
}
