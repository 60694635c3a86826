// Types of cluster.mjs, written by hand (tsconfig has no allowJs), for the TypeScript suites in test/citus.
import type { Cluster } from '../../bench/support/postgres-cluster.mjs';

export declare const PG_MAJOR: number;

export type CitusInstall =
  | { readonly dir: string; readonly skipped?: undefined }
  | { readonly skipped: string };

export declare function citusInstall(): CitusInstall;
export declare function privateTree(install: string, dir: string): string;

export interface CitusWorker {
  readonly node: Cluster;
  readonly port: number;
  readonly url: string;
}

export interface CitusCluster {
  /** The coordinator's URL, database `test` (or the one asked for). */
  readonly url: string;
  readonly coordinator: Cluster;
  readonly workers: readonly CitusWorker[];
  destroy(): Promise<void>;
}

export declare function startCitusCluster(options?: {
  readonly workers?: number;
  readonly database?: string;
  readonly shardCount?: number;
  readonly settings?: Readonly<Record<string, string>>;
  readonly install?: CitusInstall;
}): Promise<CitusCluster>;
