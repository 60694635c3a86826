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
