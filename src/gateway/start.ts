import { resolveSessionIdleTimeoutMs } from '../config/limits.js';
import type { LedgerOptions } from '../config/options.js';
import { ToolLedgerError } from '../contract/errors.js';
import { createLedger, type Ledger } from '../create-ledger.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';
import { ToolCatalog } from './catalog.js';
import { type HttpIdentityOptions, IDENTITY_KEY, listenHttp } from './http.js';
import { isCommand, stdioServerTransport, upstreamTransport } from './sdk.js';
import { GatewaySession, type SessionShared } from './session.js';
import type { GatewayIdentity, GatewayOptions, GatewayTransport, TransportExtra } from './types.js';

const DEFAULT_KEY_FIELD = 'idempotency_key';

/** Options of `startGateway`: the gateway's, plus which side the clients connect on. */
export interface StartGatewayOptions extends GatewayOptions {
  /**
   * Serve Streamable HTTP on this address; without it the gateway speaks stdio on this process's stdin and
   * stdout (or on `downstream`).
   * @default undefined (stdio)
   */
  readonly listen?: { readonly host: string; readonly port: number };
  /**
   * For HTTP: a client session with no request for this long, and no call in flight, is closed with its upstream
   * connection (or its spawned server); the client's next request gets 404 and opens a new session. 0 keeps idle
   * sessions until the client ends them.
   * @default 1800000 (30 minutes)
   */
  readonly sessionIdleTimeoutMs?: number;
  /** For HTTP: where each call's tenant and user come from. @default {} (the fixed `tenant` and `user`) */
  readonly identity?: HttpIdentityOptions;
  /**
   * The client-side transport, when not this process's stdin and stdout: any `Transport` of an MCP SDK (for
   * example one end of `InMemoryTransport.createLinkedPair()`). Typed by its lifecycle only, so every SDK
   * version's message types fit.
   * @default this process's stdio
   */
  readonly downstream?: { start(): Promise<void>; close(): Promise<void> };
}

/** A running gateway. */
export interface RunningGateway {
  /** The Streamable HTTP endpoint clients connect to (HTTP mode only). */
  readonly url: URL | undefined;
  /** The process id of the spawned upstream server (stdio mode with a command upstream). */
  readonly upstreamPid: number | undefined;
  /** Settles when the gateway has stopped (in stdio mode: when the client or the upstream went away). */
  readonly closed: Promise<void>;
  /** Answers the calls in flight, closes every connection and the ledger it opened. */
  close(): Promise<void>;
}

function isLedger(value: Ledger | LedgerOptions | undefined): value is Ledger {
  return isRecord(value) && typeof (value as unknown as Ledger).tool === 'function';
}

function checkKeyField(field: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(field)) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `keyField must be an argument name (letters, digits, _ . -; at most 64), got ${JSON.stringify(field)}.`,
    );
  }
  return field;
}

function checkTools(options: GatewayOptions): void {
  const all = { ...(options.tools ?? {}), '(defaults)': options.defaults ?? {} };
  for (const [name, tool] of Object.entries(all)) {
    if (!isRecord(tool))
      throw new ToolLedgerError('CONFIG_INVALID', `Tool settings of "${name}" must be an object.`);
    if (tool.kind !== undefined && tool.kind !== 'read' && tool.kind !== 'mutation') {
      throw new ToolLedgerError(
        'CONFIG_INVALID',
        `Tool "${name}": kind must be "read" or "mutation", got ${JSON.stringify(tool.kind)} (the gateway cannot run upstream tools as background jobs).`,
      );
    }
    if (tool.onUnknown !== undefined && tool.onUnknown !== 'fail' && tool.onUnknown !== 'rerun') {
      throw new ToolLedgerError('CONFIG_INVALID', `Tool "${name}": onUnknown must be "fail" or "rerun".`);
    }
    const t = tool.timeoutSeconds;
    if (t !== undefined && !(typeof t === 'number' && t > 0 && Number.isFinite(t))) {
      throw new ToolLedgerError(
        'CONFIG_INVALID',
        `Tool "${name}": timeoutSeconds must be a positive number.`,
      );
    }
  }
}

/**
 * Starts a gateway between MCP clients and one unmodified MCP server: mutating tools get replay safety from the
 * ledger, read-only tools and everything else pass through, with OpenTelemetry spans for every tool call.
 */
export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  checkTools(options);
  const keyField = checkKeyField(options.keyField ?? DEFAULT_KEY_FIELD);
  const idleTimeoutMs = resolveSessionIdleTimeoutMs(options.sessionIdleTimeoutMs);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const ownsLedger = !isLedger(options.ledger);
  const ledger = isLedger(options.ledger) ? options.ledger : await createLedger(options.ledger ?? {});
  const fallback: GatewayIdentity = { tenant: options.tenant, user: options.user };
  const shared: SessionShared = {
    ledger,
    catalog: new ToolCatalog({
      keyField,
      tools: options.tools ?? {},
      defaults: options.defaults ?? {},
      log,
    }),
    keyField,
    network: options.listen ? 'tcp' : 'pipe',
    pingUpstream: !isCommand(options.upstream),
    log,
    identity: (extra: TransportExtra | undefined) => {
      const carried = extra?.authInfo?.extra?.[IDENTITY_KEY];
      return isRecord(carried) ? (carried as unknown as GatewayIdentity) : fallback;
    },
  };
  const stopLedger = async () => {
    if (ownsLedger) await ledger.close();
  };
  const openSession = async (downstream: GatewayTransport) => {
    const upstream = await upstreamTransport(options.upstream);
    const session = new GatewaySession(shared, downstream, upstream);
    await session.start();
    return { session, upstream };
  };

  try {
    if (options.listen) {
      const listener = await listenHttp({
        host: options.listen.host,
        port: options.listen.port,
        identity: options.identity ?? {},
        fallback,
        idleTimeoutMs,
        openSession: async (transport) => (await openSession(transport)).session,
        log,
      });
      let resolveClosed!: () => void;
      const closed = new Promise<void>((resolve) => {
        resolveClosed = resolve;
      });
      let closing: Promise<void> | undefined;
      return {
        url: listener.url,
        upstreamPid: undefined,
        closed,
        close: () => {
          closing ??= (async () => {
            await listener.close();
            await stopLedger();
            resolveClosed();
          })();
          return closing;
        },
      };
    }
    const downstream = (options.downstream as GatewayTransport | undefined) ?? (await stdioServerTransport());
    const { session, upstream } = await openSession(downstream);
    if (options.downstream === undefined) {
      // The SDK's stdio transport does not report the end of stdin; a client that went away closes the session,
      // or the spawned server would keep this process alive.
      process.stdin.once('end', () => void session.close());
    }
    const pid = (upstream as { pid?: number | null }).pid;
    const closed = session.closed.then(stopLedger);
    return {
      url: undefined,
      upstreamPid: typeof pid === 'number' ? pid : undefined,
      closed,
      close: async () => {
        await session.close();
        await closed;
      },
    };
  } catch (error) {
    await stopLedger().catch(() => {});
    throw error;
  }
}
