// Why a handler's context has its lazy `signal` on a class prototype (src/middleware/handler-context.ts): per call,
// an object that reaches the call's other objects, made four ways, and what each way leaves to the old
// generation (bench/support/gc-account.mjs). An object with a getter of its own (an object literal's `get`, or
// `Object.defineProperty`) is kept through the young generation's collections, with everything it reaches; a plain
// field, a closure field or a getter on a class prototype is not.
// Run: node bench/gc-accessors.mjs   Env: BENCH_GC_ACCESSOR_CALLS (default 500,000)
import { runConcurrent } from './paired.mjs';
import { startGcAccount } from './support/gc-account.mjs';

const CALLS = Number(process.env.BENCH_GC_ACCESSOR_CALLS ?? 500_000);

class WithPrototypeGetter {
  #signalOf;
  constructor(id, state, signalOf) {
    this.id = id;
    this.state = state;
    this.#signalOf = signalOf;
  }
  get signal() {
    return this.#signalOf();
  }
}

const WAYS = {
  'plain field': (state) => ({ id: 1, state, signal: undefined }),
  'closure field': (state) => ({ id: 1, state, signal: () => state }),
  'getter on a class prototype': (state) => new WithPrototypeGetter(1, state, () => state),
  'own getter (object literal)': (state) => ({
    id: 1,
    state,
    get signal() {
      return state;
    },
  }),
  'own getter (defineProperty)': (state) =>
    Object.defineProperty({ id: 1, state }, 'signal', {
      get: () => state,
      enumerable: true,
      configurable: true,
    }),
};

const rows = {};
for (const [way, make] of Object.entries(WAYS)) {
  // One call: some state of its own, the object, two turns of the microtask queue, as a handler's call has.
  const call = async (i) => {
    await null;
    const state = { values: new Array(30).fill(i), name: `call_${i}` };
    const object = make(state);
    await null;
    return object.id;
  };
  await runConcurrent(50_000, 1, call);
  const account = startGcAccount();
  await runConcurrent(CALLS, 1, call);
  const gc = account.stop(CALLS);
  rows[way] = {
    scavenges: gc.scavenges,
    'promoted B/call': gc.promotedBytesPerCall.toFixed(0),
    'GC pauses µs/call': gc.gcPauseUsPerCall.toFixed(2),
  };
}
console.log(`per-call objects, ${CALLS} calls each, one at a time (Node ${process.version}):`);
console.table(rows);
