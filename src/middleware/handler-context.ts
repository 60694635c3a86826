import type { HandlerContext, StepContext } from '../contract/types.js';

/** A handler context's fields, all but the signal. */
export type HandlerContextFields = Omit<HandlerContext, 'signal'>;

/**
 * `signal` as a getter on the prototype, which asks `signalOf` on every read (the callers make the signal on the
 * first). Not a getter on each call's own object: V8 keeps an object with an accessor of its own, and everything it
 * reaches, through the young generation's collections until a full one (`bench/gc-accessors.mjs`). As the handler
 * context's own getter that cost every first execution about 600 bytes moved to the old generation, and the full
 * collections that follow (docs/performance.md, "Objects that outlived their call").
 */
class LazySignal {
  readonly #signalOf: () => AbortSignal;

  constructor(signalOf: () => AbortSignal) {
    this.#signalOf = signalOf;
  }

  get signal(): AbortSignal {
    return this.#signalOf();
  }
}

/**
 * The context a handler gets: `fields`, and a signal made only for a handler that reads it (an AbortController
 * costs about 6 µs). The signal is not an own property: spreading the context leaves it out.
 */
export function callHandlerContext(
  fields: HandlerContextFields,
  signalOf: () => AbortSignal,
): HandlerContext {
  // Every call's fields come as one literal of one shape, so every context gets the same hidden class.
  return Object.assign(new LazySignal(signalOf), fields);
}

/** The context a recorded step's function gets, with the handler's signal the same way. */
export function callStepContext(
  name: string,
  key: string,
  attempt: number,
  signalOf: () => AbortSignal,
): StepContext {
  return Object.assign(new LazySignal(signalOf), { name, key, attempt });
}
