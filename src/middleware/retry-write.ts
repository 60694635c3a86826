/** How many times a write that must land (its handler or step already acted) is sent before the caller is told. */
const TRIES = 3;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Sends `write` until it lands, `TRIES` times at most, pausing 100 ms, then 200 ms, between tries; rethrows the
 * last failure. `after` is how many tries already failed before this call (the completion sends its first try
 * itself, without an async frame, and hands over here only when it failed).
 */
export async function retryWrite<T>(write: () => Promise<T>, after = 0): Promise<T> {
  for (let tried = after; ; ) {
    if (tried > 0) await sleep(100 * tried);
    try {
      return await write();
    } catch (error) {
      if (++tried >= TRIES) throw error;
    }
  }
}
