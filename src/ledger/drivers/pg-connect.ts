import { multiHostTarget } from './connection-url.js';
import { isKeywordString, keywordStringToUrl } from './keyword-string.js';
import { readWriteClient } from './read-write.js';

/** What a `pg.Pool` or `pg.Client` is given for a connection string, whether it names one host or several. */
export interface PgConnectOptions<C> {
  /** For a host list, the URL reduced to one host: pg reads the user, database and TLS settings from it. */
  readonly connectionString: string;
  /** The whole connect: with a host list, every host's turn plus the connection to the chosen one. */
  readonly connectionTimeoutMillis: number;
  /** With a host list, the client class that walks it (pg's `Client` option); otherwise absent. */
  readonly Client?: C;
}

/**
 * pg's options for a connection string. One host and no `target_session_attrs`: the string as it is, as before.
 * A keyword string (`host=... dbname=...`) is read as the URL it stands for. A host list (or a target): a `readWriteClient` over the hosts, each given `connect_timeout` from the URL or else
 * `connectTimeoutMs`, so a host that black-holes packets costs its own bound and not the whole connect. Throws
 * `CONFIG_INVALID` for a URL libpq would refuse or a standby target.
 */
export function pgConnectOptions<C extends new (...args: never[]) => object>(
  Client: C,
  connectionString: string,
  connectTimeoutMs: number,
  env: NodeJS.ProcessEnv = process.env,
): PgConnectOptions<C> {
  // pg reads a keyword string as a database name on a host called "base": it goes as the URL it stands for.
  const url = isKeywordString(connectionString) ? keywordStringToUrl(connectionString) : connectionString;
  const target = multiHostTarget(url, env);
  if (target === undefined) return { connectionString: url, connectionTimeoutMillis: connectTimeoutMs };
  const hostConnectTimeoutMs = target.hostConnectTimeoutMs ?? connectTimeoutMs;
  return {
    connectionString: target.singleHostUrl,
    // 0 is pg's "no timeout", and libpq's connect_timeout=0 too.
    connectionTimeoutMillis: hostConnectTimeoutMs * (target.hosts.length + 1),
    Client: readWriteClient(Client as never, target.hosts, {
      targetSessionAttrs: target.targetSessionAttrs,
      loadBalanceHosts: target.loadBalanceHosts,
      hostConnectTimeoutMs,
    }) as C,
  };
}
