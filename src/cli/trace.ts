import type { KeyCall, KeyStory, StoryQuery } from '../support/trace.js';
import { escapeTerminal, formatTime, table } from './format.js';

// `inspect --trace` in the terminal: the story of a key (support/trace.ts reads it) as a timeline under the run.

/** How many calls the terminal timeline shows (the newest); `--json` has them all. */
export const TIMELINE_ROWS = 50;

/** The timeline under the run: one line per call, oldest first, ids short enough to read. */
export function formatStory(story: KeyStory, query: StoryQuery): string {
  const lines: string[] = [];
  const where = `Jaeger ${escapeTerminal(query.jaegerUrl)}, VictoriaLogs ${escapeTerminal(query.logsUrl)}`;
  // The first call (usually the original execution) and the newest ones; what lies between is counted.
  const all = story.calls;
  const skipped = Math.max(0, all.length - TIMELINE_ROWS);
  const shown = skipped === 0 ? all : [all[0] as KeyCall, ...all.slice(skipped + 1)];
  lines.push(
    all.length === 0
      ? `calls with this key (${where}): none found`
      : `calls with this key, oldest first (${where}): ${all.length}${
          skipped > 0 ? `, the first and the last ${TIMELINE_ROWS - 1} shown (--json has all)` : ''
        }`,
  );
  if (shown.length > 0) {
    const row = (c: KeyCall) => [
      formatTime(c.time),
      c.outcome ?? '?',
      c.attempt === null ? '-' : String(c.attempt),
      c.waitedMs === null ? '-' : `${c.waitedMs} ms`,
      c.traceId ?? '-',
      c.original === null ? '-' : `${c.original.traceId}/${c.original.spanId}`,
      c.sources.join('+'),
    ];
    const rows = shown.map(row);
    if (skipped > 0) rows.splice(1, 0, ['…', `${skipped} more`, '', '', '', '', '']);
    const body = table(['TIME', 'OUTCOME', 'ATTEMPT', 'WAITED', 'TRACE', 'ORIGINAL', 'FROM'], rows);
    lines.push(...body.split('\n').map((l) => `  ${l}`));
  }
  for (const problem of story.problems) lines.push(`  note: ${escapeTerminal(problem)}`);
  return lines.join('\n');
}
