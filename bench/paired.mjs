// Interleaved measurement: every side runs a chunk of calls in turn, in a rotating order, so all sides meet the
// same server, pool warmth and neighbour load. Each chunk round gives one ratio per side against the reference
// side; the median of those ratios is the result, and their spread shows the machine's noise.

export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Runs `task(i)` for i in [0, count) with `concurrency` workers; returns elapsed milliseconds. */
export async function runConcurrent(count, concurrency, task) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < count; i = next++) await task(i);
    }),
  );
  return performance.now() - started;
}

/**
 * `sides` maps a name to `{ [phase]: (chunk, i) => Promise }`; phases run in the order given, each over `chunks`
 * rounds of `chunkSize` calls per side. A replay phase reuses the chunk and index of the phase before it, so it
 * meets the rows that phase wrote. Round 0 is a warm-up and not counted. Returns, per phase, each side's rate, the
 * milliseconds of every counted round, for `pairRatio`, and this process's CPU microseconds (user + system) of each
 * side's chunk in every counted round (`cpuRounds`), for `pairRatio` too: the client's work, which a neighbour's
 * load moves less than it moves elapsed time.
 */
export async function pairedChunks({ sides, phases, chunks, chunkSize, concurrency }) {
  const names = Object.keys(sides);
  const result = {};
  for (const phase of phases) {
    const rounds = [];
    const cpuRounds = [];
    for (let c = 0; c <= chunks; c++) {
      const round = {};
      const cpu = {};
      for (let s = 0; s < names.length; s++) {
        const name = names[(c + s) % names.length];
        const before = process.cpuUsage();
        round[name] = await runConcurrent(chunkSize, concurrency, (i) => sides[name][phase](c, i));
        const used = process.cpuUsage(before);
        cpu[name] = used.user + used.system;
      }
      if (c > 0) {
        rounds.push(round);
        cpuRounds.push(cpu);
      }
    }
    const rate = Object.fromEntries(
      names.map((n) => [n, (chunks * chunkSize * 1000) / rounds.reduce((sum, r) => sum + r[n], 0)]),
    );
    result[phase] = { rate, rounds, cpuRounds };
  }
  return result;
}

/** Throughput of side `a` over side `b`, per round: median and interquartile range. */
export function pairRatio(rounds, a, b) {
  return ratioSpread(rounds.map((r) => r[b] / r[a]));
}

/** The median and quartiles of per-round ratios, in the shape `fmtRatio` prints. */
export function ratioSpread(ratios) {
  const sorted = [...ratios].sort((x, y) => x - y);
  return {
    ratio: median(sorted),
    low: sorted[Math.floor((sorted.length - 1) / 4)],
    high: sorted[Math.ceil(((sorted.length - 1) * 3) / 4)],
  };
}

export const fmtRatio = (r) => `${r.ratio.toFixed(2)} (${r.low.toFixed(2)}–${r.high.toFixed(2)})`;

/**
 * The usual run of the ratio benches: `calls` first executions and as many replays per side, in rounds of `chunkSize`
 * (see `pairedChunks`), then every side closed. Returns the number of rounds and `pairedChunks`' result.
 */
export async function firstAndReplay(sides, { calls, chunkSize, concurrency }) {
  const chunks = Math.max(1, Math.round(calls / chunkSize));
  const result = await pairedChunks({ sides, phases: ['first', 'replay'], chunks, chunkSize, concurrency });
  for (const side of Object.values(sides)) await side.close();
  return { chunks, result };
}
