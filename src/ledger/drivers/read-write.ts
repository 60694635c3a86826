import { ToolLedgerError } from '../../contract/errors.js';
import {
  type HostPort,
  LOAD_BALANCE_HOSTS,
  type LoadBalanceHosts,
  TARGET_SESSION_ATTRS,
  type TargetSessionAttrs,
} from './connection-url.js';

/**
 * libpq's host list and `target_session_attrs` for node-postgres, which has neither. A multi-host connection URL
 * given to `createLedger` (or the CLI, or the gateway) is turned into this; `readWriteClient` is also public for a
 * `pg.Pool` of your own.
 *
 * `readWriteClient(pg.Client, hosts)` is a client class for `new pg.Pool({ Client, ... })`: each new connection
 * goes to the first host, in order, that accepts it and passes the target's check, so after a standby is promoted
 * the pool's next connections reach it. Pass the pool to `createLedger({ pool })`; the ledger's own connection
 * (LISTEN, renewals) is made with the same class.
 */

export type { HostPort, LoadBalanceHosts, TargetSessionAttrs } from './connection-url.js';

export interface ReadWriteClientOptions {
  /**
   * Which server a connection must end on, as libpq's `target_session_attrs`: `read-write` (`SHOW
   * transaction_read_only` is off: not a standby, and `default_transaction_read_only` off), `primary` (not in
   * recovery), or `any` (the first that accepts). The standby values are refused: a ledger writes.
   * @default 'read-write'
   */
  readonly targetSessionAttrs?: TargetSessionAttrs;
  /**
   * How long each host may take to accept a connection before the next one is tried, as libpq's
   * `connect_timeout` but in milliseconds. 0 waits as long as the pool's options allow.
   * @default the pool's connectionTimeoutMillis, per host
   */
  readonly hostConnectTimeoutMs?: number;
  /**
   * The order each new connection tries the hosts in, as libpq 16's `load_balance_hosts`: `disable`, as given;
   * `random`, shuffled for every connection, so a pool's connections spread over several PgBouncers (or several
   * servers that all pass the target's check) instead of all going to the first.
   * @default 'disable'
   */
  readonly loadBalanceHosts?: LoadBalanceHosts;
}

/** The parts of pg's Client used here. */
interface ClientLike {
  connect(callback?: (error?: Error) => void): Promise<unknown> | undefined;
  query<R>(text: string): Promise<{ rows: R[] }>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  host: string;
  port: number;
  connectionParameters?: { host?: string; port?: number };
}

type ClientClass = new (options?: Record<string, unknown>) => ClientLike;

/** Any client class, pg's own included (its types are not imported here: pg is an optional peer). */
// biome-ignore lint/suspicious/noExplicitAny: a constructor of any options, as pg's Client is typed.
type AnyClientClass = new (...args: any[]) => object;

/** What each target asks of a connected session: why it will not do, or undefined when it will. */
const SESSION_CHECKS = {
  any: async () => undefined,
  'read-write': async (client) => {
    const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
    return rows[0]?.transaction_read_only === 'off' ? undefined : 'read-only';
  },
  primary: async (client) => {
    const { rows } = await client.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
    return rows[0]?.standby === false ? undefined : 'in recovery';
  },
} as const satisfies Record<TargetSessionAttrs, (client: ClientLike) => Promise<string | undefined>>;

/**
 * Why no host would do. When every host answered with the same Postgres error (the password or the database
 * refused everywhere), that error, so it is classified as it would be for one host and not retried in vain;
 * otherwise a connection error naming each host and why, transient, so the caller retries (a standby among them
 * may be promoted next).
 */
function noHost(target: TargetSessionAttrs, tried: readonly string[], errors: readonly unknown[]): unknown {
  const codes = new Set(errors.map((e) => (e as { code?: unknown } | null)?.code));
  const [code] = codes;
  const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
  if (errors.length === tried.length && codes.size === 1 && sqlState) return errors.at(-1);
  const wanted = target === 'any' ? 'reachable' : target;
  return Object.assign(new Error(`no ${wanted} Postgres among ${tried.join(', ')}`), {
    code: 'ECONNREFUSED',
  });
}

/** pg connects to `client.host`/`client.port`; its parameters (read for .pgpass) are kept the same. */
function pointAt(client: ClientLike, { host, port }: HostPort): void {
  client.host = host;
  client.port = port;
  if (client.connectionParameters) {
    client.connectionParameters.host = host;
    client.connectionParameters.port = port;
  }
}

function reason(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}

/** A copy of `hosts` in a uniformly random order (Fisher-Yates). */
function shuffled(hosts: readonly HostPort[]): HostPort[] {
  const order = [...hosts];
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j] as HostPort, order[i] as HostPort];
  }
  return order;
}

/** Each `load_balance_hosts` value's host order for one connection. */
const HOST_ORDERS = {
  disable: (hosts) => hosts,
  random: shuffled,
} as const satisfies Record<LoadBalanceHosts, (hosts: readonly HostPort[]) => readonly HostPort[]>;

function checkOptions(hosts: readonly HostPort[], options: ReadWriteClientOptions): TargetSessionAttrs {
  const target = options.targetSessionAttrs ?? 'read-write';
  if (!(TARGET_SESSION_ATTRS as readonly string[]).includes(target)) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `readWriteClient's targetSessionAttrs ${JSON.stringify(target)} is not one a ledger can use: pass 'read-write', 'primary' or 'any' (a ledger writes, so never a standby).`,
    );
  }
  if (!Array.isArray(hosts) || hosts.length === 0) {
    throw new ToolLedgerError('CONFIG_INVALID', 'readWriteClient needs at least one { host, port } to try.');
  }
  const balance = options.loadBalanceHosts;
  if (balance !== undefined && !(LOAD_BALANCE_HOSTS as readonly string[]).includes(balance)) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `readWriteClient's loadBalanceHosts ${JSON.stringify(balance)} is not one of 'disable' or 'random'.`,
    );
  }
  const ms = options.hostConnectTimeoutMs;
  if (ms !== undefined && !(Number.isFinite(ms) && ms >= 0)) {
    throw new ToolLedgerError(
      'CONFIG_INVALID',
      `readWriteClient's hostConnectTimeoutMs must be a number of milliseconds >= 0, got ${String(ms)}.`,
    );
  }
  return target;
}

export function readWriteClient<C extends AnyClientClass>(
  Client: C,
  hosts: readonly HostPort[],
  options: ReadWriteClientOptions = {},
): C {
  const target = checkOptions(hosts, options);
  const check = SESSION_CHECKS[target];
  const orderOf = HOST_ORDERS[options.loadBalanceHosts ?? 'disable'];
  const perHost = (given: Record<string, unknown> | undefined) =>
    options.hostConnectTimeoutMs === undefined
      ? given
      : { ...given, connectionTimeoutMillis: options.hostConnectTimeoutMs };
  // The class the pool builds clients from; pg's Pool passes its own options to each.
  const ReadWrite = class extends (Client as ClientClass) {
    readonly #options: Record<string, unknown> | undefined;

    constructor(given?: Record<string, unknown>) {
      super(perHost(given));
      this.#options = perHost(given);
    }

    // pg-pool connects with a callback, the ledger's own connection with a promise.
    override connect(callback?: (error?: Error) => void): Promise<unknown> | undefined {
      const connecting = this.#connect();
      if (!callback) return connecting;
      connecting.then(() => callback(), callback);
      return undefined;
    }

    async #connect(): Promise<void> {
      const tried: string[] = [];
      const errors: unknown[] = [];
      const order = orderOf(hosts);
      for (const [i, host] of order.entries()) {
        const name = `${host.host}:${host.port}`;
        // A pg Client connects once: every host but the last is probed by a client of its own, so the one handed
        // out connects only to a host that will do. The last has no alternative, so it is checked in place.
        const last = i === order.length - 1;
        const probe = last ? this : new (Client as unknown as ClientClass)(this.#options);
        if (!last) probe.on('error', () => {});
        pointAt(probe, host);
        let why: string | undefined;
        try {
          if (last) await super.connect();
          else await probe.connect();
          why = await check(probe);
        } catch (error) {
          why = reason(error);
          errors.push(error);
        }
        if (last) {
          if (why === undefined) return;
          await this.end().catch(() => {});
        } else {
          await probe.end().catch(() => {});
          if (why === undefined) {
            pointAt(this, host);
            await super.connect();
            return;
          }
        }
        tried.push(`${name} (${why})`);
      }
      throw noHost(target, tried, errors);
    }
  };
  return ReadWrite as unknown as C;
}
