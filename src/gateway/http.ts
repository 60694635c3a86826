import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { createTokenVerifier, type TokenVerifier } from '../auth/jwks.js';
import type { TokenVerification } from '../auth/jwt.js';
import { ToolLedgerError } from '../contract/errors.js';
import { rolesAndGroups } from './access.js';
import type { ModernLeg } from './modern.js';
import { type HttpServerTransport, httpServerTransport } from './sdk.js';
import type { GatewaySession } from './session.js';
import type { GatewayIdentity } from './types.js';

/** Where a Streamable HTTP gateway takes each call's tenant and user from. Never from tool arguments. */
export interface HttpIdentityOptions {
  /** Header naming the tenant, set by a proxy you trust (for example `x-tenant-id`). @default none */
  readonly tenantHeader?: string;
  /** Header naming the end user, set by a proxy you trust. @default none */
  readonly userHeader?: string;
  /** Verify `Authorization: Bearer <JWT>` on every request; requests without a valid token get 401. @default none */
  readonly token?: TokenVerification;
  /** The token claim naming the tenant. @default none */
  readonly tenantClaim?: string;
  /**
   * The token claim listing the caller's roles, for access rules: a string (names separated by spaces or commas)
   * or an array of strings. @default 'roles'
   */
  readonly rolesClaim?: string;
  /** The token claim listing the caller's groups, for access rules. @default 'groups' */
  readonly groupsClaim?: string;
  /** The token claim naming the user. @default 'sub' */
  readonly userClaim?: string;
}

/** Carried on the transport's `authInfo.extra`, where the session reads each call's identity. */
export const IDENTITY_KEY = 'tool-ledger/identity';

/** A request body over the gateway's `maxRequestBytes`: answered 413 before it is parsed. */
class BodyTooLarge extends Error {
  override readonly name = 'BodyTooLarge';
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  const text = Array.isArray(value) ? value[0] : value;
  return typeof text === 'string' && text.length > 0 && text.length <= 1024 ? text : undefined;
}

function claim(claims: Record<string, unknown>, name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  const value = claims[name];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

function refuse(
  res: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message } }));
}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw new BodyTooLarge();
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw new BodyTooLarge();
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

/** The identity of one HTTP request, or why it is refused. */
async function identify(
  req: IncomingMessage,
  options: HttpIdentityOptions,
  verifier: TokenVerifier | undefined,
  fallback: GatewayIdentity,
): Promise<GatewayIdentity | { readonly refused: string; readonly status: number }> {
  let tenant = fallback.tenant;
  let user = fallback.user;
  let held: Pick<GatewayIdentity, 'roles' | 'groups'> = {};
  if (verifier) {
    const auth = header(req, 'authorization');
    const token = auth?.match(/^Bearer\s+(\S+)$/i)?.[1];
    if (token === undefined) return { refused: 'A bearer token is required.', status: 401 };
    const verified = await verifier(token);
    if ('refused' in verified) return { refused: 'The bearer token is not valid.', status: 401 };
    tenant = claim(verified.claims, options.tenantClaim) ?? tenant;
    user = claim(verified.claims, options.userClaim ?? 'sub') ?? user;
    if (options.tenantClaim !== undefined && claim(verified.claims, options.tenantClaim) === undefined) {
      return { refused: `The bearer token has no "${options.tenantClaim}" claim.`, status: 403 };
    }
    held = rolesAndGroups(verified.claims, {
      claims: { roles: options.rolesClaim ?? 'roles', groups: options.groupsClaim ?? 'groups' },
    });
  }
  if (options.tenantHeader !== undefined) {
    const value = header(req, options.tenantHeader);
    if (value === undefined)
      return { refused: `The ${options.tenantHeader} header is required.`, status: 400 };
    tenant = value;
  }
  if (options.userHeader !== undefined) user = header(req, options.userHeader) ?? user;
  return { tenant, user, ...held };
}

interface HttpSession {
  readonly transport: HttpServerTransport;
  readonly session: GatewaySession;
  readonly identity: GatewayIdentity;
  idle?: NodeJS.Timeout;
}

/** The request as a web `Request` without its body (already read: the modern leg takes it parsed). */
function webRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name === 'content-length') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
    method: 'POST',
    headers,
  });
}

/** Writes a web `Response` (JSON, or an SSE stream) to the Node response. */
async function sendWeb(res: ServerResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (response.body === null) {
    res.end();
    return;
  }
  const body = Readable.fromWeb(response.body as import('node:stream/web').ReadableStream);
  res.on('close', () => body.destroy());
  body.pipe(res);
}

/** What `/readyz` answers: ready or not, and each check's state in words. */
export interface Readiness {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, string>>;
}

/** A listening Streamable HTTP gateway. */
export interface HttpListener {
  readonly url: URL;
  /**
   * Stops accepting: the listening socket closes, `/readyz` answers 503 on connections still open, and new MCP
   * requests get 503 with Retry-After, so a load balancer sends them to another replica.
   */
  stopAccepting(): void;
  close(): Promise<void>;
}

/** `/healthz` (the process serves) and `/readyz` (it should get traffic); no identity needed for either. */
async function health(
  req: IncomingMessage,
  res: ServerResponse,
  readiness: () => Promise<Readiness>,
): Promise<boolean> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' || (path !== '/healthz' && path !== '/readyz')) return false;
  const body = path === '/healthz' ? { ready: true, checks: { process: 'serving' } } : await readiness();
  res.writeHead(body.ready ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ status: body.ready ? 'ok' : 'unavailable', checks: body.checks }));
  return true;
}

/**
 * Serves MCP's Streamable HTTP transport: one gateway session (and one upstream connection) per client session.
 * A session stays bound to the identity that opened it: a request of another tenant or user with its session id
 * is refused.
 */
export async function listenHttp(options: {
  readonly host: string;
  readonly port: number;
  readonly identity: HttpIdentityOptions;
  readonly fallback: GatewayIdentity;
  /** Close a session after this long without a request and without a call in flight; 0 never. */
  readonly idleTimeoutMs: number;
  readonly openSession: (transport: HttpServerTransport) => Promise<GatewaySession>;
  /** The largest request body read; a larger one gets 413. */
  readonly maxRequestBytes: number;
  /** What `/readyz` reports (while serving; a draining gateway is never ready). */
  readonly readiness: () => Promise<Readiness>;
  /** Serves the 2026-07-28 revision's requests (sessionless); the rest go to the session-based transports. */
  readonly modern?: ModernLeg | undefined;
  readonly log: (line: string) => void;
}): Promise<HttpListener> {
  const sessions = new Map<string, HttpSession>();
  // One verifier for the listener, so a JWKS is fetched once and cached, not per request.
  const verifier = options.identity.token ? createTokenVerifier(options.identity.token) : undefined;
  let draining = false;
  const readiness = async (): Promise<Readiness> =>
    draining ? { ready: false, checks: { gateway: 'draining' } } : options.readiness();

  // A client that went away without DELETE would hold its upstream connection (or spawned server) forever.
  const touch = (id: string, known: HttpSession) => {
    if (options.idleTimeoutMs === 0) return;
    clearTimeout(known.idle);
    known.idle = setTimeout(() => {
      if (sessions.get(id) !== known) return;
      // A call still waiting for the upstream keeps its session: it is quiet, not idle.
      if (known.session.busy) return touch(id, known);
      options.log(
        `tool-ledger gateway: closing session ${id}, idle for ${Math.round(options.idleTimeoutMs / 1000)} s.`,
      );
      sessions.delete(id);
      void known.session.close();
    }, options.idleTimeoutMs);
    known.idle.unref?.();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (await health(req, res, readiness)) return;
    if (draining) {
      res.setHeader('connection', 'close');
      return refuse(res, 503, 'The gateway is shutting down; send the request again (to another replica).', {
        'retry-after': '1',
      });
    }
    const who = await identify(req, options.identity, verifier, options.fallback);
    if ('refused' in who) return refuse(res, who.status, who.refused);
    (req as IncomingMessage & { auth?: unknown }).auth = {
      token: '',
      clientId: who.user ?? '',
      scopes: [],
      extra: { [IDENTITY_KEY]: who },
    };
    const body = req.method === 'POST' ? await readBody(req, options.maxRequestBytes) : undefined;
    const sessionId = header(req, 'mcp-session-id');
    if (options.modern !== undefined && req.method === 'POST' && sessionId === undefined) {
      const request = webRequest(req);
      if (!(await options.modern.isLegacy(request, body))) {
        return sendWeb(res, await options.modern.fetch(request, body, who));
      }
    }
    if (sessionId !== undefined) {
      const known = sessions.get(sessionId);
      if (known === undefined) return refuse(res, 404, 'Session not found; initialize a new session.');
      if (known.identity.tenant !== who.tenant || known.identity.user !== who.user) {
        return refuse(res, 403, 'This session belongs to another tenant or user.');
      }
      touch(sessionId, known);
      return known.transport.handleRequest(req, res, body);
    }
    if (req.method !== 'POST') return refuse(res, 400, 'Initialize a session with a POST first.');
    let session: GatewaySession | undefined;
    const transport = await httpServerTransport({
      onSession: (id) => {
        if (session === undefined) return;
        const known: HttpSession = { transport, session, identity: who };
        sessions.set(id, known);
        touch(id, known);
      },
      onClosed: (id) => {
        clearTimeout(sessions.get(id)?.idle);
        sessions.delete(id);
      },
    });
    session = await options.openSession(transport);
    void session.closed.then(() => {
      if (transport.sessionId === undefined) return;
      clearTimeout(sessions.get(transport.sessionId)?.idle);
      sessions.delete(transport.sessionId);
    });
    await transport.handleRequest(req, res, body);
    // A POST that did not initialize a session leaves nothing behind.
    if (transport.sessionId === undefined) await session.close();
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof BodyTooLarge) {
        res.setHeader('connection', 'close');
        return refuse(
          res,
          413,
          `The request body is larger than this gateway takes (${options.maxRequestBytes} bytes).`,
        );
      }
      options.log(`tool-ledger gateway: HTTP request failed: ${(error as Error).message}`);
      if (!res.headersSent)
        refuse(res, error instanceof SyntaxError ? 400 : 500, 'The request could not be handled.');
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new ToolLedgerError(
          'CONFIG_INVALID',
          `The gateway cannot listen on ${options.host}:${options.port} (${error.message}). Pick a free port with --listen HOST:PORT.`,
          { cause: error },
        ),
      ),
    );
    server.listen(options.port, options.host, resolve);
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: new URL(`http://${host}:${address.port}/mcp`),
    stopAccepting() {
      if (draining) return;
      draining = true;
      // No new connections; the ones open get 503 for new work and are closed once idle.
      server.close();
      server.closeIdleConnections?.();
    },
    async close() {
      draining = true;
      for (const known of sessions.values()) clearTimeout(known.idle);
      await Promise.allSettled([...sessions.values()].map((s) => s.session.close()));
      server.closeAllConnections?.();
      await new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));
    },
  };
}
