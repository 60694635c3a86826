/**
 * libpq's `target_session_attrs=read-write` for node-postgres, which has no multi-host URLs (pg 8.23's
 * pg-connection-string refuses `postgres://a:5432,b:5432/db` as an invalid URL) and no such parameter.
 *
 * `readWriteClient(pg.Client, hosts)` is a client class for `new pg.Pool({ Client, ... })`: each new connection
 * goes to the first host, in order, that accepts it and is not in recovery, so after a standby is promoted the
 * pool's next connections reach it. Pass the pool to `createLedger({ pool })`; the ledger's own connection (LISTEN,
 * renewals) is made with the same class.
 */

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** The parts of pg's Client used here. */
interface ClientLike {
  connect(callback?: (error?: Error) => void): Promise<unknown> | undefined;
  query<R>(text: string): Promise<{ rows: R[] }>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
  host: string;
  port: number;
}

type ClientClass = new (options?: Record<string, unknown>) => ClientLike;

/** Any client class, pg's own included (its types are not imported here: pg is an optional peer). */
// biome-ignore lint/suspicious/noExplicitAny: a constructor of any options, as pg's Client is typed.
type AnyClientClass = new (...args: any[]) => object;

/** Why no host would do, as pg's connection errors are classified: transient, so the caller retries. */
function noReadWriteHost(tried: string[]): Error {
  return Object.assign(
    new Error(`no read-write Postgres among ${tried.join(', ')} (every host refused or is a standby)`),
    { code: 'ECONNREFUSED' },
  );
}

export function readWriteClient<C extends AnyClientClass>(Client: C, hosts: readonly HostPort[]): C {
  // The class the pool builds clients from; pg's Pool passes its own options to each.
  const ReadWrite = class extends (Client as ClientClass) {
    readonly #options: Record<string, unknown> | undefined;

    constructor(options?: Record<string, unknown>) {
      super(options);
      this.#options = options;
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
      for (const { host, port } of hosts) {
        tried.push(`${host}:${port}`);
        // A probe of its own: a pg Client connects once, so the one handed out must go to the chosen host.
        const probe = new (Client as unknown as ClientClass)({ ...this.#options, host, port });
        probe.on('error', () => {});
        try {
          await probe.connect();
          const { rows } = await probe.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby');
          if (rows[0]?.standby === false) {
            this.host = host;
            this.port = port;
            await super.connect();
            return;
          }
        } catch {
          // Down or refusing: the next host.
        } finally {
          await probe.end().catch(() => {});
        }
      }
      throw noReadWriteHost(tried);
    }
  };
  return ReadWrite as unknown as C;
}
