// One measured process of bench/callgrind.mjs, run under callgrind: `firsts` first executions of one side, one at a
// time, then `replays` replays of the first of those keys, then exit. Telemetry off; tool-ledger's replay cache
// off, so that a replay is a statement as it is from another process.
//
// Args: <hand|ledger> <url> <schema> <firsts> <replays>
import { handWritten, toolLedger } from './baselines.mjs';

const [side, url, schema, firstsArg, replaysArg] = process.argv.slice(2);
const firsts = Number(firstsArg);
const replays = Math.min(Number(replaysArg), firsts);
if (!url || !schema || !Number.isInteger(firsts) || !Number.isInteger(replays)) {
  console.error('usage: callgrind-calls.mjs <hand|ledger> <url> <schema> <firsts> <replays>');
  process.exit(2);
}
const calls =
  side === 'hand'
    ? await handWritten(url, schema, { concurrency: 1 })
    : await toolLedger(url, schema, { replayCacheEntries: 0 });
for (let i = 0; i < firsts; i++) await calls.first(0, i);
for (let i = 0; i < replays; i++) await calls.replay(0, i);
await calls.close();
