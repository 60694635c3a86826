import type { Completion, LedgerStore } from '../ledger/store.js';

/** How long an outcome whose completion failed is kept and retried. */
const KEEP_MS = 10 * 60_000;
const FIRST_DELAY_MS = 250;
// Short, so that when the database comes back the saves usually land before a retry finds the lease lapsed.
const MAX_DELAY_MS = 1000;

export interface BackgroundSaveLimits {
  readonly maxCount: number;
  readonly maxBytes: number;
}

interface Entry {
  /** The call's tenant, tool and key (`LostClaims.key`). */
  readonly key: string;
  readonly completion: Completion;
  readonly tool: string;
  readonly bytes: number;
  readonly untilMs: number;
}

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
  readonly #entries: Entry[] = [];
  /**
   * Completions whose first save is under way, by call key. While one is, this process holds a finished result
   * for that key: a retry from here saves it rather than claiming (and maybe running the handler again).
   */
  readonly #inFlight = new Map<string, Completion>();
  /** Completions a retry saved while their own first save was still stuck, by `id:attempt`, with when. */
  readonly #savedForThem = new Map<string, Date>();
  #bytes = 0;
  #loop: Promise<void> | undefined;
  #stopped = false;

  constructor(
    store: LedgerStore,
    limits: BackgroundSaveLimits,
    changed: (tool: string, delta: number) => void,
  ) {
    this.#store = store;
    this.#limits = limits;
    this.#changed = changed;
  }

  get count(): number {
    return this.#entries.length;
  }

  /** Kept or in flight: the claim loop settles these before it claims their keys. */
  get holding(): number {
    return this.#entries.length + this.#inFlight.size;
  }

  /** A finished result's first save starts: until `landed`, a retry from this process saves it instead. */
  saving(key: string, completion: Completion): void {
    this.#inFlight.set(key, completion);
  }

  /** The first save of `key`'s completion ended (saved, refused, or handed to `offer`). */
  landed(key: string, completion: Completion): void {
    if (this.#inFlight.get(key) === completion) this.#inFlight.delete(key);
  }

  /** When a retry saved this completion for its stuck first save, that time (once). */
  savedForThem(completion: Completion): Date | undefined {
    const id = `${completion.id}:${completion.attempt}`;
    const at = this.#savedForThem.get(id);
    this.#savedForThem.delete(id);
    return at;
  }

  /** The finished result this process holds for `key`, kept or in flight. */
  held(key: string): Completion | undefined {
    if (this.holding === 0) return undefined;
    return this.#inFlight.get(key) ?? this.#entries.find((e) => e.key === key)?.completion;
  }

  /** Reports a tool's count as 0 before anything is kept, so its series exists (and alerts see 0, not nothing). */
  announce(tool: string): void {
    this.#changed(tool, 0);
  }

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Keeps `completion` to save later. False when the limits leave no room for it: the caller must be told the
   * outcome was not kept. Returns the loop's promise on the first entry, for `close()` to wait on.
   */
  offer(tool: string, key: string, completion: Completion, track: (work: Promise<void>) => void): boolean {
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
      track(this.#loop);
    }
    return true;
  }

  /**
   * Saves this key's kept outcome now, before a call from this process claims the key: otherwise, once the lease
   * lapsed, the claim would take the key over and run the handler again while its outcome sits here. Throws
   * (the database is still down) when the save fails; the entry stays for the next try.
   */
  async flush(key: string): Promise<void> {
    const inFlight = this.#inFlight.get(key);
    if (inFlight) {
      // Its own save may be stuck on a dead connection for up to queryTimeoutSeconds, longer than the lease: send
      // the same fenced completion on another connection. Whichever lands first wins; the other is refused.
      const at = await this.#store.complete(inFlight, () => {});
      if (at) {
        this.#savedForThem.set(`${inFlight.id}:${inFlight.attempt}`, at);
        if (this.#savedForThem.size > 10_000)
          this.#savedForThem.delete(this.#savedForThem.keys().next().value!);
      }
      this.landed(key, inFlight);
    }
    if (this.#entries.length === 0) return;
    const entry = this.#entries.find((e) => e.key === key);
    if (!entry) return;
    await this.#store.complete(entry.completion, () => {});
    this.#drop(entry);
  }

  /** Forgets `key`'s held completion: a later attempt saved its result under its own fence. */
  release(key: string): void {
    this.#inFlight.delete(key);
    const entry = this.#entries.find((e) => e.key === key);
    if (entry) this.#drop(entry);
  }

  /** Stops sending: what is still kept is dropped (its lease lapses and a later retry decides). */
  stop(): void {
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
