// Where a bench process's garbage collection goes over a measured run, for bench/fleet-worker.mjs: how often V8
// collected (scavenges of the young generation, full mark-compacts), how many bytes each call left to the old
// generation (what scavenges promoted: objects still reachable at two scavenges in a row, which only a full
// collection frees), the main thread's pauses, and the CPU of V8's and libuv's other threads (concurrent marking and
// sweeping, parallel scavenging, background compiles), which `process.cpuUsage()` counts with the main thread's.
import { readdirSync, readFileSync } from 'node:fs';
import v8 from 'node:v8';

/** CPU ticks (user + system) of this process's main thread and of all its other threads; undefined off Linux. */
function threadTicks() {
  let main = 0;
  let others = 0;
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // Fields after the command name, which may hold spaces: utime and stime are the 12th and 13th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = Number(fields[11]) + Number(fields[12]);
      if (tid === String(process.pid)) main += ticks;
      else others += ticks;
    }
  } catch {
    return undefined;
  }
  return { main, others };
}

// Linux's USER_HZ, which /proc reports ticks in: 100 on every architecture Node runs on there.
const TICK_US = 10_000;

const oldSpaceUsed = (snapshot) =>
  snapshot.heapSpaceStatistics.find((s) => s.spaceName === 'old_space')?.spaceUsedSize ?? 0;

/** Starts counting; `stop(calls)` answers the figures per call. */
export function startGcAccount() {
  const profiler = new v8.GCProfiler();
  const ticksBefore = threadTicks();
  profiler.start();
  return {
    stop(calls) {
      const { statistics } = profiler.stop();
      const ticksAfter = threadTicks();
      let scavenges = 0;
      let fullCollections = 0;
      let promoted = 0;
      let pauseUs = 0;
      for (const gc of statistics) {
        pauseUs += gc.cost;
        if (gc.gcType === 'Scavenge') {
          scavenges++;
          promoted += Math.max(0, oldSpaceUsed(gc.afterGC) - oldSpaceUsed(gc.beforeGC));
        } else if (gc.gcType === 'MarkSweepCompact') fullCollections++;
      }
      const threads =
        ticksBefore && ticksAfter
          ? {
              mainThreadUsPerCall: ((ticksAfter.main - ticksBefore.main) * TICK_US) / calls,
              otherThreadsUsPerCall: ((ticksAfter.others - ticksBefore.others) * TICK_US) / calls,
            }
          : {};
      return {
        scavenges,
        fullCollections,
        promotedBytesPerCall: promoted / calls,
        gcPauseUsPerCall: pauseUs / calls,
        ...threads,
      };
    },
  };
}
