import { type GatewaySettingsOptions, resolveGatewaySettings } from '../config/gateway.js';
import type { LedgerOptions } from '../config/options.js';
import { ToolLedgerError } from '../contract/errors.js';
import { createLedger, type Ledger } from '../create-ledger.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';
import { checkAccessRules } from './access.js';
import { ToolCatalog } from './catalog.js';
import { Gate } from './gate.js';
import { type HttpIdentityOptions, IDENTITY_KEY, listenHttp, type Readiness } from './http.js';
import { type ModernLeg, modernLeg } from './modern.js';
import { isCommand, stdioServerTransport, upstreamTransport } from './sdk.js';
import { GatewaySession, type SessionShared } from './session.js';
import { checkTenantLimits } from './tenant-limits.js';
import { ToolLabels } from './tool-labels.js';
import type {
  GatewayIdentity,
  GatewayOptions,
  GatewayTransport,
  TransportExtra,
  UrlUpstream,
} from './types.js';
import { connectUpstream, startUpstream, urlUpstreamAnswers } from './upstream-probe.js';

const DEFAULT_KEY_FIELD = 'idempotency_key';

/**
 * Options of `startGateway`: the gateway's, its timings and bounds (`GatewaySettingsOptions`, documented with their
 * defaults in docs/gateway.md), plus which side the clients connect on.
 */
export interface StartGatewayOptions extends GatewayOptions, GatewaySettingsOptions {
  /**
   * Serve Streamable HTTP on this address; without it the gateway speaks stdio on this process's stdin and
   * stdout (or on `downstream`).
   * @default undefined (stdio)
   */
  readonly listen?: { readonly host: string; readonly port: number };
  /**
   * For HTTP: the protocol revisions served. `2026-07-28` (sessionless Streamable HTTP, server discovery) needs
   * the optional peer `@modelcontextprotocol/server` (2.x); `2025-11-25` is the session-based transport of
   * `@modelcontextprotocol/sdk` 1.x, which also serves clients of earlier revisions.
   * @default ['2026-07-28', '2025-11-25']
   */
  readonly revisions?: readonly ('2026-07-28' | '2025-11-25')[];
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
  /**
   * Drains and stops: over HTTP it stops accepting (new requests get 503, `/readyz` says not ready), answers the
   * calls in flight within `drainTimeoutMs`, then closes every connection and the ledger it opened.
   */
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

function checkIdentity(options: GatewayOptions): void {
  for (const field of ['tenant', 'user'] as const) {
    const value = options[field];
    if (value !== undefined && (typeof value !== 'string' || value.trim() === '' || value.length > 256)) {
      throw new ToolLedgerError(
        'CONFIG_INVALID',
        `The gateway's ${field} must be a non-empty name of at most 256 characters, got ${JSON.stringify(value)}. Leave it out for ${field === 'tenant' ? 'the tenant "default"' : 'no user'}.`,
      );
    }
  }
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
  checkIdentity(options);
  const invalidOption = (why: string) =>
    new ToolLedgerError('CONFIG_INVALID', `The gateway options are invalid: ${why}.`);
  if (options.access !== undefined) checkAccessRules(options.access, invalidOption);
  if (options.limits !== undefined) checkTenantLimits(options.limits, invalidOption);
  const keyField = checkKeyField(options.keyField ?? DEFAULT_KEY_FIELD);
  const settings = resolveGatewaySettings(pickSettings(options));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const ownsLedger = !isLedger(options.ledger);
  const ledger = isLedger(options.ledger) ? options.ledger : await createLedger(options.ledger ?? {});
  const fallback: GatewayIdentity = { tenant: options.tenant, user: options.user };
  const labels = new ToolLabels([
    ...Object.keys(options.tools ?? {}),
    ...Object.keys(options.access?.tools ?? {}),
  ]);
  const shared: SessionShared = {
    ledger,
    catalog: new ToolCatalog({
      keyField,
      tools: options.tools ?? {},
      defaults: options.defaults ?? {},
      log,
      onListed: (name) => labels.listed(name),
    }),
    keyField,
    network: options.listen ? 'tcp' : 'pipe',
    pingUpstream: !isCommand(options.upstream),
    log,
    settings,
    gate: new Gate(options.access, options.limits, labels),
    startUpstream: (transport) => startUpstream(options.upstream, transport),
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
      const upstreamReady = await checkUpstreamAtStart(
        options.upstream,
        settings.upstreamConnectTimeoutMs,
        log,
      );
      const modern = await modernLegIfWanted(options, shared, log);
      const listener = await listenHttp({
        modern,
        host: options.listen.host,
        port: options.listen.port,
        identity: {
          ...(options.access?.claims?.roles === undefined ? {} : { rolesClaim: options.access.claims.roles }),
          ...(options.access?.claims?.groups === undefined
            ? {}
            : { groupsClaim: options.access.claims.groups }),
          ...options.identity,
        },
        fallback,
        idleTimeoutMs: settings.sessionIdleTimeoutMs,
        maxRequestBytes: settings.maxRequestBytes,
        readiness: upstreamReady,
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
            listener.stopAccepting();
            await listener.close();
            await modern?.close();
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

const SETTING_NAMES = [
  'upstreamPingIntervalMs',
  'upstreamPingTimeoutMs',
  'upstreamPingMisses',
  'upstreamCallTimeoutMs',
  'upstreamConnectTimeoutMs',
  'sessionIdleTimeoutMs',
  'drainTimeoutMs',
  'maxRequestBytes',
] as const satisfies readonly (keyof GatewaySettingsOptions)[];

function pickSettings(options: StartGatewayOptions): GatewaySettingsOptions {
  const picked: Record<string, number | undefined> = {};
  for (const name of SETTING_NAMES) if (options[name] !== undefined) picked[name] = options[name];
  return picked as GatewaySettingsOptions;
}

/**
 * Checks the upstream before the gateway serves anyone. A command is spawned and initialized once (a missing
 * command fails the start with an error that says so); an HTTP upstream that does not answer yet is logged and
 * reported by `/readyz` until it does. Answers what `/readyz` reports about the upstream.
 */
async function checkUpstreamAtStart(
  upstream: StartGatewayOptions['upstream'],
  timeoutMs: number,
  log: (line: string) => void,
): Promise<() => Promise<Readiness>> {
  if (isCommand(upstream)) {
    const probe = await connectUpstream(upstream, timeoutMs, log);
    await probe.transport.close().catch(() => {});
    // Each session spawns its own server; one spawned and initialized at start shows the command works.
    return async () => ({ ready: true, checks: { ledger: 'open', upstream: 'command starts' } });
  }
  const url = upstream as UrlUpstream;
  let last = { at: 0, answers: await urlUpstreamAnswers(url, timeoutMs) };
  last.at = Date.now();
  if (!last.answers) {
    log(
      `tool-ledger gateway: the upstream MCP server at ${String(url.url)} does not answer yet; /readyz says not ready until it does.`,
    );
  }
  let checking: Promise<void> | undefined;
  return async () => {
    // At most one check a second, one at a time, however often an orchestrator asks.
    if (Date.now() - last.at > 1000) {
      checking ??= urlUpstreamAnswers(url, Math.min(timeoutMs, 2000))
        .then((answers) => {
          last = { at: Date.now(), answers };
        })
        .finally(() => {
          checking = undefined;
        });
      await checking;
    }
    return {
      ready: last.answers,
      checks: { ledger: 'open', upstream: last.answers ? 'answers' : 'does not answer' },
    };
  };
}

/** The 2026-07-28 leg, unless left out; without its optional peer it is skipped (logged) unless asked for by name. */
async function modernLegIfWanted(
  options: StartGatewayOptions,
  shared: SessionShared,
  log: (line: string) => void,
): Promise<ModernLeg | undefined> {
  if (options.revisions !== undefined && !options.revisions.includes('2026-07-28')) return undefined;
  try {
    return await modernLeg(shared, options.upstream, IDENTITY_KEY);
  } catch (error) {
    if (options.revisions !== undefined) throw error;
    log(`tool-ledger gateway: serving the session-based revision only: ${(error as Error).message}`);
    return undefined;
  }
}
