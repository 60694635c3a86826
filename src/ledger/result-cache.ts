import { KeyedSlots } from '../contract/slots.js';
import type { ClaimRow, RunKey, RunRow, RunStatus } from './run-row.js';

/**
 * Completed runs this process has seen, so a replay from the same process skips the database. A completed row is
 * immutable until it expires (only an expired row is taken over or purged), so an entry is good until the row's
 * expiry by the database clock: the deadline is the row's `expires_in_ms` counted from when the statement was sent,
 * which errs early by the round trip. A hit is a replay only for the same user and parameters; anything else goes
 * to the database, which judges conflicts and counts them. Bounded by entries and bytes, least recently used out.
 *
 * What it changes: a row deleted or edited by hand before its expiry still replays from a process that cached it,
 * until the expiry or the process restarts (`replayCacheEntries: 0` turns the cache off).
 */
export interface ResultCacheLimits {
  readonly maxEntries: number;
  readonly maxBytes: number;
}

/** What a completion this process wrote changed in the row it claimed. */
export interface WrittenCompletion {
  readonly status: Exclude<RunStatus, 'in_progress'>;
  readonly final: boolean;
  readonly completedAt: Date;
  readonly expiresInMs: number;
  readonly resultText: string | null;
  readonly errorText: string | null;
}

/**
 * One cached run, flat: the columns a completion leaves alone copied out of the row it was claimed or read as, so
 * the cache never keeps a claim's row object alive (V8 then keeps allocating every claim's row in the old
 * generation, as if all of them lived long).
 */
interface Entry {
  readonly id: string;
  readonly userId: string | null;
  readonly parameterHash: string;
  readonly attempt: number;
  readonly jobId: string | null;
  readonly traceId: string | null;
  readonly spanId: string | null;
  readonly status: RunStatus;
  readonly final: boolean;
  /**
   * Milliseconds since the epoch, not the `Date`: a `Date` is one of the larger objects an entry would keep for its
   * 10,000 calls in the old generation, and each hit gets a fresh one, as a database read would give.
   */
  readonly completedAtMs: number | null;
  /** The result (or stored error) as JSON text: each hit parses a fresh copy, as a database read would. */
  readonly resultText: string | null;
  readonly errorText: string | null;
  /** `performance.now()` past which the row may have expired. */
  readonly deadline: number;
  readonly bytes: number;
  /** The recency list: the least recently used entry is the list's head. */
  older: Entry | undefined;
  newer: Entry | undefined;
  readonly key: string;
}

/** Per-entry overhead beyond its strings: the row object, its dates and the map slot (measured ~1.4 KB). */
const ENTRY_OVERHEAD_BYTES = 1200;

export function cacheKey(tenant: string, tool: string, key: string): string {
  // Joined rather than concatenated: `join` makes one flat string, where `+` and templates make a tree of parts
  // that the map flattens into a second string on its first lookup, and an entry then keeps both.
  return [tenant, tool, key].join('\u0000');
}

/** A run this process claimed, kept until its completion fills the cache from it (see `ResultCache.claimed`). */
export interface ClaimedRun {
  readonly key: string;
  readonly row: ClaimRow;
}

export class ResultCache {
  readonly #limits: ResultCacheLimits;
  readonly #entries = new Map<string, Entry>();
  /**
   * Claims this process won and has not completed yet (by run id), so a completion can fill the cache from them.
   * Not a `Map`: every first execution adds and removes one (contract/slots.ts).
   */
  readonly #claimed = new KeyedSlots<ClaimedRun>();
  // A linked list rather than the Map's own order: evicting through a Map iterator walks every slot deletes left
  // behind at its front, which measured 13 µs per completion with 10,000 entries.
  #oldest: Entry | undefined;
  #newest: Entry | undefined;
  #bytes = 0;

  constructor(limits: ResultCacheLimits) {
    this.#limits = limits;
  }

  get enabled(): boolean {
    return this.#limits.maxEntries > 0;
  }

  get maxEntries(): number {
    return this.#limits.maxEntries;
  }

  get size(): number {
    return this.#entries.size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Remembers the completed row of `key` (see `cacheKey`) read by a statement sent at `sentAt`
   * (`performance.now()`), or the run this process claimed and completed (`written`). A completion written here
   * evicts the least recently used; a row only read takes free room only, so a sweep over more keys than fit (a
   * batch replayed in order) cannot flush the whole cache.
   */
  remember(key: string, row: RunRow, sentAt: number, written?: WrittenCompletion): void {
    if (this.#limits.maxEntries <= 0) return;
    if (written === undefined && this.#entries.size >= this.#limits.maxEntries) return;
    const status = written?.status ?? row.status;
    const final = written?.final ?? row.final;
    const completed = status === 'succeeded' || (status === 'failed' && final);
    if (!completed) return;
    const remainingMs = written?.expiresInMs ?? row.expires_in_ms;
    if (!(remainingMs > 0)) return;
    const text = written
      ? written.resultText
      : row.result_json == null
        ? null
        : JSON.stringify(row.result_json);
    const errorText = written
      ? written.errorText
      : row.error_json == null
        ? null
        : JSON.stringify(row.error_json);
    const bytes = ENTRY_OVERHEAD_BYTES + 2 * (key.length + (text?.length ?? 0) + (errorText?.length ?? 0));
    if (bytes > this.#limits.maxBytes) return;
    this.forget(key);
    const entry: Entry = {
      id: row.id,
      userId: row.user_id,
      parameterHash: row.parameter_hash,
      attempt: row.attempt,
      jobId: row.job_id,
      traceId: row.trace_id,
      spanId: row.span_id,
      status,
      final,
      completedAtMs: (written ? written.completedAt : row.completed_at)?.getTime() ?? null,
      resultText: text,
      errorText,
      deadline: sentAt + remainingMs,
      bytes,
      older: undefined,
      newer: undefined,
      key,
    };
    this.#entries.set(key, entry);
    this.#append(entry);
    this.#bytes += bytes;
    while (
      this.#oldest &&
      (this.#entries.size > this.#limits.maxEntries || this.#bytes > this.#limits.maxBytes)
    ) {
      this.#drop(this.#oldest);
    }
  }

  /** The cache's key of a call's tenant, tool and key; empty when the cache is off (nothing to build). */
  keyOf(runKey: RunKey): string {
    return this.enabled ? cacheKey(runKey.tenant, runKey.tool, runKey.key) : '';
  }

  /** Keeps a run this process won (under `key`, see `keyOf`) until its completion, which fills the cache from it. */
  claimed(key: string, row: ClaimRow): ClaimRow {
    if (!this.enabled) return row;
    this.#claimed.set(row.id, { key, row });
    // Bounded like the cache: a claim whose completion never comes (a crash of its handler's save) ages out.
    if (this.#claimed.size > this.#limits.maxEntries) this.#claimed.deleteAny();
    return row;
  }

  /** Hands over, once, the run this process claimed as `id`: its completion is under way. */
  takeClaimed(id: string): ClaimedRun | undefined {
    return this.#claimed.take(id);
  }

  /**
   * Caches the run `claimed` as the completion of its `attempt` this process wrote left it, when that completion
   * committed on its own (one inside a transaction is not committed yet, and may never be) and is still this claim's
   * attempt (the run was not taken over meanwhile).
   */
  completed(
    claimed: ClaimedRun | undefined,
    attempt: number,
    sentAt: number,
    written: WrittenCompletion,
  ): void {
    if (claimed && claimed.row.attempt === attempt) this.remember(claimed.key, claimed.row, sentAt, written);
  }

  #append(entry: Entry): void {
    entry.older = this.#newest;
    entry.newer = undefined;
    if (this.#newest) this.#newest.newer = entry;
    else this.#oldest = entry;
    this.#newest = entry;
  }

  #unlink(entry: Entry): void {
    if (entry.older) entry.older.newer = entry.newer;
    else this.#oldest = entry.newer;
    if (entry.newer) entry.newer.older = entry.older;
    else this.#newest = entry.older;
    entry.older = undefined;
    entry.newer = undefined;
  }

  /**
   * The completed row for this key (see `cacheKey`), as the claim would return it, when it has not expired and belongs to the same
   * user and parameters; otherwise undefined (the caller asks the database).
   */
  replay(
    cacheKeyText: string,
    user: string | null,
    paramsHash: string,
    runKey: RunKey,
  ): ClaimRow | undefined {
    const entry = this.#entries.get(cacheKeyText);
    if (!entry) return undefined;
    const now = performance.now();
    if (now >= entry.deadline) {
      this.forget(cacheKeyText);
      return undefined;
    }
    if (entry.parameterHash !== paramsHash || entry.userId !== user) return undefined;
    // Most recently used goes last.
    this.#unlink(entry);
    this.#append(entry);
    return {
      claim: 'existing',
      runKey,
      id: entry.id,
      user_id: entry.userId,
      parameter_hash: entry.parameterHash,
      status: entry.status,
      final: entry.final,
      attempt: entry.attempt,
      lease_owner: null,
      lease_remaining_ms: null,
      result_json: entry.resultText === null ? null : JSON.parse(entry.resultText),
      error_json: entry.errorText === null ? null : JSON.parse(entry.errorText),
      job_id: entry.jobId,
      steps: null,
      step_token: null,
      lapsed: false,
      trace_id: entry.traceId,
      span_id: entry.spanId,
      completed_at: entry.completedAtMs === null ? null : new Date(entry.completedAtMs),
      expires_in_ms: entry.deadline - now,
      lease_live: false,
      takeover_due: false,
      waiting: false,
    };
  }

  forget(key: string): void {
    const entry = this.#entries.get(key);
    if (entry) this.#drop(entry);
  }

  #drop(entry: Entry): void {
    this.#entries.delete(entry.key);
    this.#unlink(entry);
    this.#bytes -= entry.bytes;
  }
}
