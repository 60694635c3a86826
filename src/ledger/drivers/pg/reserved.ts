import {
  type ClientConstructor,
  checkoutWithin,
  type PgClientLike,
  type PgPoolLike,
  withinMs,
} from './client.js';

/**
 * The pg driver's connection of its own, beside the pool: it holds LISTEN and sends lease renewals, which must
 * never queue behind a pool full of the very work they keep alive. Its life is a state machine, so that what can
 * happen in each state is written down once (`RESERVED_TRANSITIONS`) rather than spread over flags.
 */
export const RESERVED_STATES = ['idle', 'opening', 'open', 'backoff', 'closed'] as const;
export type ReservedState = (typeof RESERVED_STATES)[number];

export const RESERVED_EVENTS = [
  /** A statement or a LISTEN needs the connection now. */
  'need',
  /** The connection is up (and listens on every channel). */
  'opened',
  /** Opening failed. */
  'failed',
  /** The open connection died (error, end, or a statement whose answer never came). */
  'lost',
  /** The backoff after a failure is over. */
  'retry',
  'close',
] as const;
export type ReservedEvent = (typeof RESERVED_EVENTS)[number];

/**
 * Where each event leads from each state; `undefined` means the event cannot happen there (a bug if it does).
 * After `failed` and `lost` the connection is reopened only while anyone listens: renewals open it on demand.
 * `failed` and `lost` lead to `backoff` or `opening`/`idle` as the caller decides between the listed targets.
 */
export const RESERVED_TRANSITIONS: {
  readonly [S in ReservedState]: { readonly [E in ReservedEvent]: readonly ReservedState[] | undefined };
} = {
  idle: {
    need: ['opening'],
    opened: undefined,
    failed: undefined,
    lost: undefined,
    retry: undefined,
    close: ['closed'],
  },
  opening: {
    need: ['opening'],
    opened: ['open'],
    // Backoff while anyone listens (LISTEN must come back on its own); idle otherwise.
    failed: ['backoff', 'idle'],
    lost: undefined,
    retry: undefined,
    close: ['closed'],
  },
  open: {
    need: ['open'],
    opened: undefined,
    failed: undefined,
    // Reopened at once while anyone listens, as the old connection may have missed notices; idle otherwise.
    lost: ['opening', 'idle'],
    retry: undefined,
    close: ['closed'],
  },
  backoff: {
    // A renewal cannot wait out the backoff: it opens now.
    need: ['opening'],
    opened: undefined,
    failed: undefined,
    lost: undefined,
    retry: ['opening'],
    close: ['closed'],
  },
  closed: {
    need: ['closed'],
    opened: undefined,
    failed: undefined,
    lost: undefined,
    retry: undefined,
    close: ['closed'],
  },
};

/** One open connection: its client, and how to drop it without waiting on a peer that may never answer. */
export interface OpenConnection {
  readonly client: Pick<PgClientLike, 'query' | 'on'>;
  dispose(): void;
  /** The last statement sent: statements go one at a time (pg 9 drops its own queue). */
  tail?: Promise<unknown>;
}

/** Sends one statement on the reserved connection after the ones before it, all within the bound. */
export function send<R>(connection: OpenConnection, text: string, params: unknown[] | undefined, ms: number) {
  const work = () => connection.client.query<R>(text, params);
  const next = (connection.tail ?? Promise.resolve()).then(work, work);
  connection.tail = next.catch(() => {});
  return withinMs(next, ms);
}

/**
 * A `pg.Pool` exposes its client class and options, so the reserved connection is opened beside the pool rather
 * than taking one of its clients (a full pool would otherwise starve renewals and a pool of one deadlock its
 * waiters); other pools lend a client.
 */
export async function openReserved(
  pool: PgPoolLike,
  onLost: () => void,
  connectMs: number,
): Promise<OpenConnection> {
  const { Client, options } = pool as { Client?: ClientConstructor; options?: unknown };
  let lost = false;
  const lose = () => {
    if (lost) return;
    lost = true;
    onLost();
  };
  if (typeof Client === 'function' && options) {
    const client = new Client(options);
    client.on('error', lose);
    client.on('end', lose);
    const destroy = () => {
      const stream = (client as { connection?: { stream?: { destroy?(): void } } }).connection?.stream;
      stream?.destroy?.();
      client.end().catch(() => {});
    };
    try {
      await withinMs(client.connect(), connectMs);
    } catch (error) {
      destroy();
      throw error;
    }
    return { client, dispose: destroy };
  }
  const client = await checkoutWithin(pool, connectMs, lose);
  return { client, dispose: () => client.release(true) };
}

/** What each state holds: the machine's data lives with its state, never beside it. */
type Holding =
  | { readonly state: 'idle' }
  | { readonly state: 'opening'; readonly opening: Promise<OpenConnection> }
  | { readonly state: 'open'; readonly opening: Promise<OpenConnection>; readonly connection: OpenConnection }
  | { readonly state: 'backoff'; readonly timer: NodeJS.Timeout }
  | { readonly state: 'closed' };

export const FIRST_RETRY_MS = 100;
export const MAX_RETRY_MS = 5_000;

export interface ReservedOptions {
  /**
   * Opens a connection; `onLost` is called when it dies. Resolves once it is usable (LISTEN sent for every
   * channel, via `subscribe`).
   */
  open(onLost: () => void): Promise<OpenConnection>;
  /** Runs once a connection is up, before it is handed out: LISTEN on every channel. */
  subscribe(connection: OpenConnection): Promise<void>;
  /** True while anyone listens, so the connection must come back by itself after it dies. */
  wanted(): boolean;
}

/** The reserved connection's state machine. */
export class ReservedConnection {
  readonly #options: ReservedOptions;
  #holding: Holding = { state: 'idle' };
  #retryMs = FIRST_RETRY_MS;

  constructor(options: ReservedOptions) {
    this.#options = options;
  }

  get state(): ReservedState {
    return this.#holding.state;
  }

  #move(event: ReservedEvent, next: Holding): void {
    const allowed = RESERVED_TRANSITIONS[this.#holding.state][event];
    if (!allowed?.includes(next.state)) {
      throw new Error(
        `tool-ledger bug: reserved connection ${this.#holding.state} --${event}--> ${next.state}`,
      );
    }
    this.#holding = next;
  }

  /** The open connection, opening it when there is none. Rejects once closed or when opening fails. */
  connection(): Promise<OpenConnection> {
    const holding = this.#holding;
    switch (holding.state) {
      case 'closed':
        return Promise.reject(new Error('Client was closed and is not queryable'));
      case 'opening':
      case 'open':
        return holding.opening;
      case 'idle':
      case 'backoff':
        if (holding.state === 'backoff') clearTimeout(holding.timer);
        return this.#open('need');
    }
  }

  #open(event: 'need' | 'retry' | 'lost'): Promise<OpenConnection> {
    let self: OpenConnection | undefined;
    const opening: Promise<OpenConnection> = this.#options
      .open(() => {
        if (self) this.lost(self);
      })
      .then(async (connection) => {
        self = connection;
        await this.#options.subscribe(connection);
        return connection;
      });
    this.#move(event, { state: 'opening', opening });
    opening.then(
      (connection) => {
        if (this.#holding.state === 'opening' && this.#holding.opening === opening) {
          this.#retryMs = FIRST_RETRY_MS;
          this.#move('opened', { state: 'open', opening, connection });
        } else {
          // Closed (or superseded) while opening: nobody holds this connection.
          connection.dispose();
        }
      },
      () => {
        self?.dispose();
        if (this.#holding.state !== 'opening' || this.#holding.opening !== opening) return;
        this.#afterFailure();
      },
    );
    return opening;
  }

  #afterFailure(): void {
    if (!this.#options.wanted()) {
      this.#move('failed', { state: 'idle' });
      return;
    }
    const ms = this.#retryMs * (0.8 + Math.random() * 0.4);
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
    const timer = setTimeout(() => {
      if (this.#holding.state === 'backoff' && this.#holding.timer === timer)
        this.#open('retry').catch(() => {});
    }, ms);
    timer.unref();
    this.#move('failed', { state: 'backoff', timer });
  }

  /** The connection `connection` died or stopped answering: drop it, and reopen it while anyone listens. */
  lost(connection: OpenConnection): void {
    const holding = this.#holding;
    if (holding.state !== 'open' || holding.connection !== connection) return;
    connection.dispose();
    if (this.#options.wanted()) this.#open('lost').catch(() => {});
    else this.#move('lost', { state: 'idle' });
  }

  /** Drops the open connection on purpose (it listened where it must not); reopened only while wanted. */
  drop(): void {
    if (this.#holding.state === 'open') this.lost(this.#holding.connection);
  }

  /** A listener arrived: make sure a connection is (or is being) opened. */
  ensure(): void {
    if (this.#holding.state === 'idle' || this.#holding.state === 'backoff')
      this.connection().catch(() => {});
  }

  close(): void {
    const holding = this.#holding;
    this.#move('close', { state: 'closed' });
    if (holding.state === 'open') holding.connection.dispose();
    if (holding.state === 'backoff') clearTimeout(holding.timer);
    // An opening connection is disposed when it resolves (see #open).
  }
}
