import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, readText } from './support/configs.js';
import { BINARIES, STACK_CACHE } from './support/stack.js';

/**
 * Issue 26: scripts/stack/build.sh with overlapping runs. Both runs succeed: the second waits for the first's
 * lock, then finds the program built; each program is built in a temporary folder and renamed into place, and
 * progress is printed per program. The test builds the smallest program (VictoriaLogs) for real, into a copy of
 * the stack cache that lacks it, so it needs Go and a built cache (with a warm Go build cache it takes seconds).
 */

const required = process.env.TOOL_LEDGER_STACK_REQUIRED === '1' || process.env.CI === 'true';
const hasGo = spawnSync('go', ['version']).status === 0;
const built = Object.values(BINARIES).every((path) => existsSync(path));
const skip = !(hasGo && built) && !required;
if (skip) {
  console.warn(
    `test/ops/stack-build.test.ts SKIPPED: needs Go and the built stack cache (${STACK_CACHE}); run \`bash scripts/stack/build.sh\`.`,
  );
}

const BUILD = join(ROOT, 'scripts/stack/build.sh');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function start(cache: string): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn('bash', [BUILD], {
    env: { ...process.env, TOOL_LEDGER_STACK_CACHE: cache },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<Run>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

/** A copy of the stack cache without VictoriaLogs: hard links where possible, so copying costs nothing. */
function cacheWithoutVictoriaLogs(): string {
  const cache = mkdtempSync(join(tmpdir(), 'tool-ledger-stack-cache-'));
  dirs.push(cache);
  for (const entry of readdirSync(STACK_CACHE)) {
    if (entry.startsWith('victoria-logs-') || entry.startsWith('.')) continue;
    const from = join(STACK_CACHE, entry);
    if (!statSync(from).isDirectory()) continue;
    mkdirSync(join(cache, entry));
    for (const file of readdirSync(from)) {
      const r = spawnSync('ln', [join(from, file), join(cache, entry, file)]);
      if (r.status !== 0) cpSync(join(from, file), join(cache, entry, file));
    }
  }
  return cache;
}

describe.skipIf(skip)('scripts/stack/build.sh', () => {
  it('says how long a cold build takes', () => {
    expect(readText('scripts/stack/build.sh')).toMatch(/cold build .* takes about 16 minutes on 2 cores/);
  });

  it('two overlapping runs both succeed: one builds, the other waits for its lock', async () => {
    expect(hasGo && built, 'CI needs Go and the built stack cache').toBe(true);
    const cache = cacheWithoutVictoriaLogs();
    const first = start(cache);
    const second = start(cache);
    const [a, b] = await Promise.all([first.done, second.done]);
    for (const run of [a, b]) {
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.trim()).toBe(cache);
      for (const step of ['[1/3] jaeger', '[2/3] otelcol', '[3/3] victoria-logs']) {
        expect(run.stderr).toContain(`stack build: ${step}: checking`);
        expect(run.stderr).toMatch(
          new RegExp(`stack build: ${step.replace(/[[\]/]/g, '\\$&')}: done in \\d+s`),
        );
      }
    }
    // Exactly one of them built VictoriaLogs; the other found it done.
    const builders = [a, b].filter((r) => r.stderr.includes('building VictoriaLogs'));
    expect(builders).toHaveLength(1);
    expect([a, b].some((r) => r.stderr.includes('waiting for it to finish'))).toBe(true);
    const folder = readdirSync(cache).find((e) => e.startsWith('victoria-logs-')) as string;
    expect(readdirSync(join(cache, folder)).sort()).toEqual(['.complete', 'victoria-logs']);
    // Nothing temporary is left behind.
    expect(readdirSync(cache).filter((e) => e.startsWith('.tmp-'))).toEqual([]);
  }, 900_000);
});
