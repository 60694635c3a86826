const DEFAULT_LIMIT = 1000;

/**
 * Remembers `compute`'s answers for recent strings, for values that repeat across calls (tenants, log bodies,
 * retried keys, the parameter hash of a replayed input). Cleared when full rather than evicting one by one: high
 * cardinality means the cache is not helping anyway. An undefined answer is not remembered.
 */
export function boundedCache<V>(
  compute: (text: string) => V | undefined,
  limit = DEFAULT_LIMIT,
): (text: string) => V | undefined {
  const cache = new Map<string, V>();
  return (text) => {
    const hit = cache.get(text);
    if (hit !== undefined) return hit;
    const value = compute(text);
    if (value === undefined) return undefined;
    if (cache.size >= limit) cache.clear();
    cache.set(text, value);
    return value;
  };
}

/**
 * `boundedCache` for answers that depend on two values, kept by the values themselves: a call's strings are
 * usually the same string objects every time (a tool's name, an outcome), whose hashes the engine keeps, where a
 * string joined from them would be new, and hashed again, on every call.
 */
export function boundedPairCache<A, B, V>(
  compute: (a: A, b: B) => V | undefined,
  limit = DEFAULT_LIMIT,
): (a: A, b: B) => V | undefined {
  const cache = new Map<A, Map<B, V>>();
  let count = 0;
  return (a, b) => {
    let inner = cache.get(a);
    const hit = inner?.get(b);
    if (hit !== undefined) return hit;
    const value = compute(a, b);
    if (value === undefined) return undefined;
    if (count >= limit) {
      cache.clear();
      count = 0;
      inner = undefined;
    }
    if (inner === undefined) {
      inner = new Map();
      cache.set(a, inner);
    }
    inner.set(b, value);
    count += 1;
    return value;
  };
}
