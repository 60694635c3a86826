import { KeyedSlots } from '../contract/slots.js';
import type { Completion } from '../ledger/fence.js';
import { cacheKey } from '../ledger/result-cache.js';
import type { LedgerStore, OperationTimer } from '../ledger/store.js';
import { retryWrite } from './retry-write.js';

/** How long an outcome whose completion failed is kept and retried. */
const KEEP_MS = 10 * 60_000;
const FIRST_DELAY_MS = 250;
// Short, so that when the database comes back the saves usually land before a retry finds the lease lapsed.
const MAX_DELAY_MS = 1000;

export interface BackgroundSaveLimits {
  readonly maxCount: number;
  readonly maxBytes: number;
}

/** Where the saves keep their count, their work and their end. */
export interface BackgroundSaveSettings {
  readonly store: LedgerStore;
  readonly limits: BackgroundSaveLimits;
  /** Told each change of a tool's count of kept results (telemetry's `unsavedResults`). */
  readonly changed: (tool: string, delta: number) => void;
  /** Keeps `close()` waiting for the sending loop. */
  readonly track: (work: Promise<void>) => void;
  /** Registers what stops the sending when the ledger closes. */
  readonly onClose: (stop: () => void) => void;
}

/** What this process keeps when a result is dropped, and the limits that left no room for it. */
export interface KeptLoad extends BackgroundSaveLimits {
  readonly count: number;
  readonly bytes: number;
}

/**
 * How a completion's save went:
 * - `landed`: saved (by this write, or by a retry from this process that saved it for a stuck first write);
 * - `refused`: the fence refused it, another caller took the key over;
 * - `kept`: the database failed, and the completion is kept here and sent again until it lands;
 * - `dropped`: the database failed, and the limits left no room to keep it.
 */
export type SaveAnswer =
  | { readonly kind: 'landed'; readonly at: Date }
  | { readonly kind: 'refused' }
  | { readonly kind: 'kept'; readonly error: unknown }
  | { readonly kind: 'dropped'; readonly error: unknown; readonly load: KeptLoad };

const REFUSED: SaveAnswer = { kind: 'refused' };

interface Entry {
  /** The call's tenant, tool and key (`LostClaims.key`). */
  readonly key: string;
  readonly completion: Completion;
  readonly tool: string;
  readonly bytes: number;
  readonly untilMs: number;
}

/** A completion's run and attempt, which its first save and a retry's save of it share. */
const runAttempt = (completion: Completion) => `${completion.id}:${completion.attempt}`;

function sleep(ms: number): Promise<void> {
  // Not kept alive for this: a process that is done may exit, as it could crash, and a later retry decides.
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Outcomes the database refused to save, kept in memory and sent again until they land. One queue per ledger,
 * bounded in count and bytes: while the database is down, one save is tried per backoff step however many wait;
 * when one lands the rest follow at once.
 */
export class BackgroundSaves {
  readonly #store: LedgerStore;
  readonly #limits: BackgroundSaveLimits;
  readonly #changed: (tool: string, delta: number) => void;
  readonly #track: (work: Promise<void>) => void;
  readonly #entries: Entry[] = [];
  /**
   * Completions whose first save is under way, by call key. While one is, this process holds a finished result
   * for that key: a retry from here saves it rather than claiming (and maybe running the handler again). Not a
   * `Map`: every first execution adds and removes one (contract/slots.ts).
   */
  readonly #inFlight = new KeyedSlots<Completion>();
  /** Completions a retry saved while their own first save was still stuck, by `id:attempt`, with when. */
  readonly #savedForThem = new Map<string, Date>();
  /**
   * Those retries' saves still under way, by `id:attempt`. A retry's write may land first while its answer is still
   * on the way: the first save, refused meanwhile, waits for these before it calls itself refused.
   */
  readonly #savingForThem = new Map<string, Set<Promise<void>>>();
  #bytes = 0;
  #loop: Promise<void> | undefined;
  #stopped = false;

  constructor(settings: BackgroundSaveSettings) {
    this.#store = settings.store;
    this.#limits = settings.limits;
    this.#changed = settings.changed;
    this.#track = settings.track;
    // Closing stops the sending once its timeout has passed.
    settings.onClose(() => this.#stop());
  }

  /**
   * Saves a finished execution's completion under its fence, retrying briefly: the handler already ran, so losing
   * its result is the costly path. While the write is under way this process holds the outcome (`key` is the
   * call's tenant, tool and key, `cacheKey`): a retry from here saves it rather than running the handler again.
   * A completion the database fails to take is kept and sent again, within the limits.
   */
  save(key: string, tool: string, completion: Completion, timer: OperationTimer): Promise<SaveAnswer> {
    this.#inFlight.set(key, completion);
    // One `then` on the first write, every first execution's path; the retries are the rare path, async. (A
    // `.catch` on every first write cost each call a closure and a promise more.)
    return this.#store.complete(completion, timer).then(
      (at) => (at ? this.#landedAt(key, completion, at) : this.#ended(key, completion, undefined)),
      () => this.#retried(key, tool, completion, timer),
    );
  }

  /** The first write failed: retries it briefly, then keeps the completion (or drops it) if it still fails. */
  async #retried(
    key: string,
    tool: string,
    completion: Completion,
    timer: OperationTimer,
  ): Promise<SaveAnswer> {
    let at: Date | undefined;
    try {
      at = await retryWrite(() => this.#store.complete(completion, timer), 1);
    } catch (error) {
      this.#landed(key, completion);
      at = await this.#savedForThemBy(completion);
      if (at) return { kind: 'landed', at };
      if (this.#keep(tool, key, completion)) return { kind: 'kept', error };
      return {
        kind: 'dropped',
        error,
        load: { count: this.#entries.length, bytes: this.#bytes, ...this.#limits },
      };
    }
    return this.#ended(key, completion, at);
  }

  /** A write answered: landed at `at`, or refused, which a retry from this process may have saved for us. */
  async #ended(key: string, completion: Completion, at: Date | undefined): Promise<SaveAnswer> {
    at ??= await this.#savedForThemBy(completion);
    this.#landed(key, completion);
    return at ? { kind: 'landed', at } : REFUSED;
  }

  #landedAt(key: string, completion: Completion, at: Date): SaveAnswer {
    this.#landed(key, completion);
    return { kind: 'landed', at };
  }

  /**
   * The result this process holds for `key` from an attempt before `attempt` (kept, or its first save in flight),
   * handed over once: the later attempt saves it under its own fence instead of producing it again.
   */
  takeHeld(key: string, attempt: number): string | undefined {
    // A first attempt has no earlier one to take from: every first execution skips the look-ups.
    if (attempt <= 1 || this.#holding === 0) return undefined;
    const held = this.#inFlight.get(key) ?? this.#entries.find((e) => e.key === key)?.completion;
    if (!held || held.attempt >= attempt || held.status !== 'succeeded' || held.resultJson === null)
      return undefined;
    this.#release(key);
    return held.resultJson;
  }

  /** Kept or in flight: the claim loop settles these before it claims their keys. */
  get #holding(): number {
    return this.#entries.length + this.#inFlight.size;
  }

  /** The first save of `key`'s completion ended (saved, refused, or handed to `#keep`). */
  #landed(key: string, completion: Completion): void {
    this.#inFlight.deleteIf(key, completion);
  }

  /**
   * When a retry saved this completion for its stuck first save, that time (once), after the retries' saves of it
   * still under way have ended: each is one fenced statement, bounded by the query timeout.
   */
  async #savedForThemBy(completion: Completion): Promise<Date | undefined> {
    const id = runAttempt(completion);
    const saving = this.#savingForThem.get(id);
    if (saving) await Promise.allSettled(saving);
    const at = this.#savedForThem.get(id);
    this.#savedForThem.delete(id);
    return at;
  }

  /** Sends `completion` for its first save, which may be stuck, and records when it landed. */
  #saveForThem(completion: Completion): Promise<void> {
    const id = runAttempt(completion);
    const saving = this.#store
      .complete(completion, () => {})
      .then((at) => {
        if (!at) return;
        this.#savedForThem.set(id, at);
        if (this.#savedForThem.size > 10_000)
          this.#savedForThem.delete(this.#savedForThem.keys().next().value!);
      });
    const pending = this.#savingForThem.get(id) ?? new Set<Promise<void>>();
    this.#savingForThem.set(id, pending.add(saving));
    const settled = () => {
      pending.delete(saving);
      if (pending.size === 0 && this.#savingForThem.get(id) === pending) this.#savingForThem.delete(id);
    };
    saving.then(settled, settled);
    return saving;
  }

  /**
   * Keeps `completion` to save later. False when the limits leave no room for it: the caller must be told the
   * outcome was not kept. Tracks the loop's promise on the first entry, for `close()` to wait on.
   */
  #keep(tool: string, key: string, completion: Completion): boolean {
    const bytes =
      Buffer.byteLength(completion.resultJson ?? '') +
      (completion.error ? Buffer.byteLength(JSON.stringify(completion.error)) : 0);
    if (
      this.#stopped ||
      this.#entries.length >= this.#limits.maxCount ||
      this.#bytes + bytes > this.#limits.maxBytes
    ) {
      return false;
    }
    this.#entries.push({ key, completion, tool, bytes, untilMs: Date.now() + KEEP_MS });
    this.#bytes += bytes;
    this.#changed(tool, 1);
    if (!this.#loop) {
      this.#loop = this.#run().finally(() => {
        this.#loop = undefined;
      });
      this.#track(this.#loop);
    }
    return true;
  }

  /**
   * Saves the outcome this process holds for a call's key now, before a call from this process claims the key:
   * otherwise, once the lease lapsed, the claim would take the key over and run the handler again while its
   * outcome sits here. Undefined when nothing is held (no promise, no await on the common path); rejects (the
   * database is still down) when the save fails, and the entry stays for the next try.
   */
  flush(tenant: string, tool: string, key: string): Promise<void> | undefined {
    if (this.#holding === 0) return undefined;
    // Under concurrency other keys' first saves are nearly always under way: only this key's make a promise, since
    // an async call and its await cost every claim a few µs.
    const callKey = cacheKey(tenant, tool, key);
    if (!this.#inFlight.has(callKey) && !this.#entries.some((e) => e.key === callKey)) return undefined;
    return this.#flush(callKey);
  }

  async #flush(key: string): Promise<void> {
    const inFlight = this.#inFlight.get(key);
    if (inFlight) {
      // Its own save may be stuck on a dead connection for up to queryTimeoutSeconds, longer than the lease: send
      // the same fenced completion on another connection. Whichever lands first wins; the other is refused.
      await this.#saveForThem(inFlight);
      this.#landed(key, inFlight);
    }
    if (this.#entries.length === 0) return;
    const entry = this.#entries.find((e) => e.key === key);
    if (!entry) return;
    await this.#store.complete(entry.completion, () => {});
    this.#drop(entry);
  }

  /** Forgets `key`'s held completion: a later attempt saves its result under its own fence. */
  #release(key: string): void {
    this.#inFlight.delete(key);
    const entry = this.#entries.find((e) => e.key === key);
    if (entry) this.#drop(entry);
  }

  /** Stops sending: what is still kept is dropped (its lease lapses and a later retry decides). */
  #stop(): void {
    this.#stopped = true;
    for (const entry of this.#entries.splice(0)) this.#changed(entry.tool, -1);
    this.#bytes = 0;
  }

  #drop(entry: Entry): void {
    const index = this.#entries.indexOf(entry);
    if (index < 0) return;
    this.#entries.splice(index, 1);
    this.#bytes -= entry.bytes;
    this.#changed(entry.tool, -1);
  }

  async #run(): Promise<void> {
    let delayMs = FIRST_DELAY_MS;
    while (!this.#stopped && this.#entries.length > 0) {
      await sleep(delayMs);
      const entry = this.#entries[0];
      if (this.#stopped || !entry) return;
      if (entry.untilMs <= Date.now()) {
        this.#drop(entry);
        continue;
      }
      try {
        // Fenced like any completion: refused (undefined) when another caller took the key over meanwhile.
        await this.#store.complete(entry.completion, () => {});
        this.#drop(entry);
        delayMs = 0;
      } catch {
        delayMs = Math.min(Math.max(delayMs * 2, FIRST_DELAY_MS), MAX_DELAY_MS);
      }
    }
  }
}
