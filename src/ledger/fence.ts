import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { StoredError } from '../contract/types.js';
import type { ClaimRow, RunKey, RunStatus } from './run-row.js';

/** Which attempt of which run, under whose lease: the fence every write of a running execution carries. */
export interface RunFence {
  /** The run's id: this process's handle on it (waits, held saves); the database finds the row by `runKey`. */
  readonly id: string;
  readonly runKey: RunKey;
  readonly attempt: number;
  readonly leaseOwner: string;
  /** The partitioned layout's: the partition key the claim read (see `FenceScope` in sql/runs.ts). */
  readonly partitionKey?: string | undefined;
}

/** How a run ends, as its fenced completion writes it. */
export interface Completion extends RunFence {
  readonly status: Exclude<RunStatus, 'in_progress'>;
  readonly final: boolean;
  /** Already JSON text. */
  readonly resultJson: string | null;
  readonly error: StoredError | null;
  readonly ttlSeconds: number;
}

/** The fence of the attempt a claim won. */
export function fenceOf(row: ClaimRow): RunFence {
  return {
    id: row.id,
    runKey: row.runKey,
    attempt: row.attempt,
    leaseOwner: row.lease_owner!,
    partitionKey: row.partition_key,
  };
}

/** The fence's $1 to $5 of every fenced statement (see `KEY_FENCE` in sql/runs.ts). */
export function fenceParams(fence: RunFence): unknown[] {
  return [fence.runKey.tenant, fence.runKey.tool, fence.runKey.key, fence.attempt, fence.leaseOwner];
}

/**
 * A lease owner names the worker for support (`host:pid`) plus a part that keeps every claim's fencing token
 * unique: 96 random bits drawn once per process (so also across restarts that reuse a pid) and a counter, which
 * costs a claim nothing, where a random UUID per claim cost about 2 µs.
 */
export function newLeaseOwner(): string {
  claimsOwned++;
  return `${WORKER}:${claimsOwned.toString(36)}`;
}

// Read once: `hostname()` is a system call.
const WORKER = `${hostname()}:${process.pid}:${randomBytes(12).toString('base64url')}`;
let claimsOwned = 0;
