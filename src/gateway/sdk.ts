import { ToolLedgerError } from '../contract/errors.js';
import type { CommandUpstream, GatewayTransport, UrlUpstream } from './types.js';

/**
 * The MCP SDK's transports, loaded when a gateway starts: `@modelcontextprotocol/sdk` 1.x is an optional peer,
 * needed only by applications that run a gateway. Its transports speak every revision that line negotiates, and
 * the gateway relays messages without parsing them into SDK types.
 */
async function load<T>(specifier: string): Promise<T> {
  try {
    return (await import(specifier)) as T;
  } catch (error) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `The tool-ledger gateway needs the MCP TypeScript SDK (${specifier} could not be loaded: ${(error as Error).message}). Install it next to tool-ledger: npm install @modelcontextprotocol/sdk`,
      { cause: error },
    );
  }
}

export function isCommand(upstream: CommandUpstream | UrlUpstream): upstream is CommandUpstream {
  return typeof (upstream as CommandUpstream).command === 'string';
}

/** A transport to the upstream: a spawned child over stdio, or a Streamable HTTP client. */
export async function upstreamTransport(
  upstream: CommandUpstream | UrlUpstream,
): Promise<GatewayTransport & { readonly pid?: number | null }> {
  if (isCommand(upstream)) {
    const { StdioClientTransport, getDefaultEnvironment } = await load<
      typeof import('@modelcontextprotocol/sdk/client/stdio.js')
    >('@modelcontextprotocol/sdk/client/stdio.js');
    return new StdioClientTransport({
      command: upstream.command,
      args: [...(upstream.args ?? [])],
      // The SDK passes only a safe subset of the environment by default; a gateway is transparent, so the whole.
      env: upstream.env ?? { ...getDefaultEnvironment(), ...(process.env as Record<string, string>) },
      ...(upstream.cwd === undefined ? {} : { cwd: upstream.cwd }),
      stderr: 'inherit',
    }) as unknown as GatewayTransport;
  }
  const { StreamableHTTPClientTransport } = await load<
    typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js')
  >('@modelcontextprotocol/sdk/client/streamableHttp.js');
  return new StreamableHTTPClientTransport(new URL(String(upstream.url)), {
    requestInit: { headers: { ...upstream.headers } },
  }) as unknown as GatewayTransport;
}

/** The client side over this process's stdin and stdout. */
export async function stdioServerTransport(): Promise<GatewayTransport> {
  const { StdioServerTransport } = await load<typeof import('@modelcontextprotocol/sdk/server/stdio.js')>(
    '@modelcontextprotocol/sdk/server/stdio.js',
  );
  return new StdioServerTransport() as unknown as GatewayTransport;
}

export type HttpServerTransport = GatewayTransport & {
  handleRequest(req: unknown, res: unknown, body?: unknown): Promise<void>;
};

/** The client side of one Streamable HTTP session. */
export async function httpServerTransport(options: {
  readonly onSession: (sessionId: string) => void;
  readonly onClosed: (sessionId: string) => void;
}): Promise<HttpServerTransport> {
  const { StreamableHTTPServerTransport } = await load<
    typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js')
  >('@modelcontextprotocol/sdk/server/streamableHttp.js');
  const { randomUUID } = await import('node:crypto');
  return new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: options.onSession,
    onsessionclosed: options.onClosed,
  }) as unknown as HttpServerTransport;
}
