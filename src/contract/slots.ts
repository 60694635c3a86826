/**
 * Collections that outlive the calls going through them (the leases held now, the first saves under way, the runs
 * claimed and not yet completed) and gain and lose an item on every call. They are arrays whose items know their
 * index (`slot`), so adding is a push and removing moves the last item into the hole. Not a `Map` or `Set` with a
 * set and a delete per call: a long-lived one replaces its hash table every so many calls, and what the replaced
 * tables held went on being reached until a full collection, so each call's completion, lease or promise, and all
 * they reached, was promoted to the old generation: about 1 KB per first execution against the hand-written
 * code's 30 bytes (docs/performance.md, "Collections that gain and lose an item per call").
 */

/** An item of a slot list: its index there, or -1 when it is in none. */
export interface Slotted {
  slot: number;
}

/** Adds `item` (in no list yet) to `list`. */
export function addToSlots<T extends Slotted>(list: T[], item: T): void {
  item.slot = list.length;
  list.push(item);
}

/** Removes `item` from `list`; false when it was not there (removed already, or in another list). */
export function removeFromSlots<T extends Slotted>(list: T[], item: T): boolean {
  const index = item.slot;
  if (index < 0 || list[index] !== item) return false;
  const last = list.pop()!;
  if (last !== item) {
    list[index] = last;
    last.slot = index;
  }
  item.slot = -1;
  return true;
}

/** A power of two: a key's bucket is the low bits of its hash. */
const BUCKETS = 256;

/** FNV-1a over the UTF-16 code units: cheap, and spreads keys that differ only in their last characters. */
function bucketOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return hash & (BUCKETS - 1);
}

/** `#remove`'s "whatever the value is", which no caller's value can be. */
const ANY_VALUE: unique symbol = Symbol('any value');

interface KeyedEntry<V> extends Slotted {
  readonly key: string;
  readonly value: V;
}

/**
 * Values by string key, for a collection with an add and a remove per call: a fixed table of slot-list buckets,
 * which never rehashes (see above). One value per key: adding a key replaces its value.
 */
export class KeyedSlots<V> {
  readonly #buckets: KeyedEntry<V>[][] = Array.from({ length: BUCKETS }, () => []);
  #size = 0;
  #nextEviction = 0;

  get size(): number {
    return this.#size;
  }

  static #find<V>(bucket: readonly KeyedEntry<V>[], key: string): KeyedEntry<V> | undefined {
    for (const entry of bucket) if (entry.key === key) return entry;
    return undefined;
  }

  get(key: string): V | undefined {
    return this.#size === 0 ? undefined : KeyedSlots.#find(this.#buckets[bucketOf(key)]!, key)?.value;
  }

  has(key: string): boolean {
    return this.#size !== 0 && KeyedSlots.#find(this.#buckets[bucketOf(key)]!, key) !== undefined;
  }

  set(key: string, value: V): void {
    const bucket = this.#buckets[bucketOf(key)]!;
    const existing = KeyedSlots.#find(bucket, key);
    if (existing && removeFromSlots(bucket, existing)) this.#size--;
    addToSlots(bucket, { key, value, slot: -1 });
    this.#size++;
  }

  /**
   * Removes some entry, for a bound on the size: from the buckets in turn, so entries long left behind go as the
   * table stays full. False when there is none.
   */
  deleteAny(): boolean {
    if (this.#size === 0) return false;
    for (let tried = 0; tried < BUCKETS; tried++) {
      const bucket = this.#buckets[this.#nextEviction]!;
      this.#nextEviction = (this.#nextEviction + 1) & (BUCKETS - 1);
      if (bucket.length > 0) {
        removeFromSlots(bucket, bucket[0]!);
        this.#size--;
        return true;
      }
    }
    return false;
  }

  /** Removes `key`'s value; false when it had none. */
  delete(key: string): boolean {
    return this.#remove(key) !== undefined;
  }

  /** Removes `key`'s value and answers it (undefined when it had none): a `get` and a `delete` in one look-up. */
  take(key: string): V | undefined {
    return this.#remove(key)?.value;
  }

  /**
   * Removes `key`'s value only when it is `value` (the same object), in one look-up: for an entry a later add may
   * have replaced, whose owner must not remove its successor. False when it was not there.
   */
  deleteIf(key: string, value: V): boolean {
    return this.#remove(key, value) !== undefined;
  }

  #remove(key: string, only: V | typeof ANY_VALUE = ANY_VALUE): KeyedEntry<V> | undefined {
    if (this.#size === 0) return undefined;
    const bucket = this.#buckets[bucketOf(key)]!;
    const entry = KeyedSlots.#find(bucket, key);
    if (!entry || (only !== ANY_VALUE && entry.value !== only) || !removeFromSlots(bucket, entry))
      return undefined;
    this.#size--;
    return entry;
  }
}
