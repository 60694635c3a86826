// Taking a CPU profile of this process with node:inspector and reading its self time per category of code, for
// bench/cpu-profile.mjs.
import { Session } from 'node:inspector/promises';

const DIST = new URL('../dist/', import.meta.url).href;
const BENCH = new URL('./', import.meta.url).href;

/** Runs `fn` under V8's sampling profiler (interval in µs); returns its result and the profile. */
export async function profiled(intervalUs, fn) {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await session.post('Profiler.start');
    const result = await fn();
    const { profile } = await session.post('Profiler.stop');
    return { result, profile };
  } finally {
    // Disconnecting also stops a profiler that `fn`'s failure left running.
    session.disconnect();
  }
}

// Functions without a script: V8's and Node's native entries. Anything else without a url is another builtin.
// `init` is the native half of `createHash`/`createHmac` (the profile gives no script for it).
const NATIVE = {
  '(garbage collector)': '(garbage collector)',
  '(program)': '(program): native code outside JS, event loop',
  '(idle)': '(idle)',
  '(root)': '(program): native code outside JS, event loop',
  runMicrotasks: 'runMicrotasks (native part)',
  writev: 'native: socket writes (writev, writeBuffer, …)',
  writeBuffer: 'native: socket writes (writev, writeBuffer, …)',
  writeUtf8String: 'native: socket writes (writev, writeBuffer, …)',
  writeLatin1String: 'native: socket writes (writev, writeBuffer, …)',
  Hash: 'node: crypto (JS and native)',
  Hmac: 'node: crypto (JS and native)',
  oneShotDigest: 'node: crypto (JS and native)',
  digest: 'node: crypto (JS and native)',
  update: 'node: crypto (JS and native)',
  init: 'node: crypto (JS and native)',
};

// Node's own modules, first match wins.
const NODE = [
  [/^node:(net|stream|internal\/(streams|stream_base_commons|net))/, 'node: net/stream'],
  [
    /^node:(internal\/)?(async_hooks|async_local_storage|async_context)/,
    'node: async hooks/AsyncLocalStorage',
  ],
  [/^node:(internal\/)?crypto/, 'node: crypto (JS and native)'],
  [/^node:(internal\/)?timers/, 'node: timers'],
  [/^node:/, 'node: other'],
];

/** The category of one profile node, from its script url (or name, for native entries). */
export function categoryOf({ functionName, url }) {
  if (!url) return NATIVE[functionName] ?? 'native: other builtins';
  const modules = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (modules) {
    const name = modules[1];
    if (/^pg(-|$)/.test(name)) return 'node_modules: pg*';
    if (name.startsWith('@opentelemetry/')) return 'node_modules: @opentelemetry/* (SDK, API)';
    return 'node_modules: other';
  }
  if (url.startsWith(DIST)) {
    const path = url.slice(DIST.length);
    const slash = path.indexOf('/');
    return `tool-ledger: ${slash < 0 ? '(top-level files)' : path.slice(0, slash)}`;
  }
  if (url.startsWith(BENCH)) return 'bench/ (hand-written code, harness)';
  for (const [pattern, category] of NODE) if (pattern.test(url)) return category;
  return 'other scripts';
}

/** Self time per profile node, in µs: each sample holds until the next one (the last until the end). */
export function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, { frame: n.callFrame, us: 0 }]));
  let at = profile.startTime;
  const stamps = profile.timeDeltas.map((d) => {
    at += d;
    return at;
  });
  for (let i = 0; i < profile.samples.length; i++) {
    const next = i + 1 < stamps.length ? stamps[i + 1] : profile.endTime;
    byId.get(profile.samples[i]).us += Math.max(0, next - stamps[i]);
  }
  return [...byId.values()].filter((n) => n.us > 0);
}

// The order of the printed rows: tool-ledger's folders, then the other code a call runs, then the VM's entries.
const ORDER = [
  'tool-ledger: ',
  'bench/',
  'node_modules: ',
  'node: ',
  'native: ',
  'runMicrotasks',
  '(garbage',
  '(program',
  '(idle',
];
const rank = (category) => ORDER.findIndex((prefix) => category.startsWith(prefix));
export const byPrintOrder = (a, b) => rank(a) - rank(b) || a.localeCompare(b);

/** µs per call by category. */
export function byCategory(nodes, calls) {
  const out = {};
  for (const { frame, us } of nodes) {
    const category = categoryOf(frame);
    out[category] = (out[category] ?? 0) + us / calls;
  }
  return out;
}

/** The functions with most self time among the nodes `keep` selects, merged over call paths: µs per call. */
export function topFunctions(nodes, calls, keep, count = 10) {
  const merged = new Map();
  for (const { frame, us } of nodes) {
    if (!keep(frame)) continue;
    const file = frame.url.startsWith(DIST)
      ? frame.url.slice(DIST.length)
      : frame.url.replace(/^.*\/node_modules\//, '');
    const key = `${frame.functionName || '(anonymous)'}\u0000${file}:${frame.lineNumber + 1}`;
    merged.set(key, (merged.get(key) ?? 0) + us / calls);
  }
  return [...merged.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, us]) => {
      const [fn, file] = key.split('\u0000');
      return { function: fn, file, 'µs/call': us.toFixed(1) };
    });
}
