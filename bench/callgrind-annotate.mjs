// Self instructions per function from callgrind output files (callgrind_annotate), for bench/callgrind.mjs: which
// functions make up the difference between two runs.
import { execFileSync } from 'node:child_process';
import { basename } from 'node:path';

const LINE = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.+)$/;

/**
 * A readable name: C++ argument lists dropped. Code without a symbol in no object file is V8's generated code,
 * whose addresses differ from process to process, so it is counted as one.
 */
function functionName(entry) {
  const object = /\[([^\]]+)\]\s*$/.exec(entry)?.[1];
  const where = entry.replace(/\s*\[[^\]]*\]\s*$/, '');
  const name = where
    .slice(where.indexOf(':') + 1)
    .replaceAll('(anonymous namespace)', '{anon}')
    .replace(/\(.*$/s, '');
  if (/^0x[0-9a-f]+('\d+)?$/.test(name)) {
    if (!object || object === '???') return 'JIT-compiled code';
    return `${basename(object)} ${name.replace(/^0x0+/, '0x')}`;
  }
  return name.length > 60 ? `${name.slice(0, 57)}...` : name;
}

/** The part of a per-call map spent in functions whose name matches `pattern`. */
export function matchingCost(costs, pattern) {
  let sum = 0;
  for (const [name, value] of costs) if (pattern.test(name)) sum += value;
  return sum;
}

/** Self instructions by function, summed over `files`. */
export function selfCosts(files) {
  const costs = new Map();
  for (const file of files) {
    const text = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', file], {
      maxBuffer: 256 * 1024 * 1024,
      timeout: 120_000,
    }).toString();
    const body = text.slice(text.indexOf('file:function'));
    for (const line of body.split('\n')) {
      const m = LINE.exec(line);
      if (!m) continue;
      const name = functionName(m[2]);
      costs.set(name, (costs.get(name) ?? 0) + Number(m[1].replaceAll(',', '')));
    }
  }
  return costs;
}

/** Per call, by function: `(to - from) / calls`. */
export function perCallCosts(from, to, calls) {
  const result = new Map();
  for (const name of new Set([...from.keys(), ...to.keys()]))
    result.set(name, ((to.get(name) ?? 0) - (from.get(name) ?? 0)) / calls);
  return result;
}

/**
 * Rows for the functions that differ most between the sides, `top` per phase: `phases` maps a phase to
 * `{ hand, ledger }` per-call maps.
 */
export function differenceRows(phases, top) {
  const names = new Set();
  for (const { hand, ledger } of Object.values(phases)) {
    const all = new Set([...hand.keys(), ...ledger.keys()]);
    const delta = (n) => Math.abs((ledger.get(n) ?? 0) - (hand.get(n) ?? 0));
    for (const n of [...all].sort((a, b) => delta(b) - delta(a)).slice(0, top)) names.add(n);
  }
  const rows = {};
  for (const name of names) {
    rows[name] = {};
    for (const [phase, { hand, ledger }] of Object.entries(phases)) {
      rows[name][`hand-written ${phase}`] = Math.round(hand.get(name) ?? 0).toLocaleString('en-US');
      rows[name][`tool-ledger ${phase}`] = Math.round(ledger.get(name) ?? 0).toLocaleString('en-US');
    }
  }
  return rows;
}
