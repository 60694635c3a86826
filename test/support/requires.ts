import { spawnSync } from 'node:child_process';

/**
 * Tests that need a program outside Node and npm (docker-compose, promtool, prometheus, the native stack) skip
 * where it is absent, so `npm install && npm test` passes on a fresh machine, and say in one line what to install.
 * CI sets TOOL_LEDGER_REQUIRE_ALL=1 (.ci/run): then a missing program fails the test file instead, so nothing CI
 * is meant to run can go quietly unrun.
 */
export const REQUIRE_ALL = process.env.TOOL_LEDGER_REQUIRE_ALL === '1';

export interface Requirement {
  /** What the tests need, as the skip line names it. */
  readonly name: string;
  /** How to get it. */
  readonly install: string;
  /** Why it is not usable here, or undefined when it is. */
  missing(): string | undefined;
}

/** A program on PATH that answers `args` with exit status 0. */
export function program(command: string, args: readonly string[], install: string): Requirement {
  let checked: { reason: string | undefined } | undefined;
  return {
    name: command,
    install,
    missing() {
      if (!checked) {
        const probe = spawnSync(command, args, { stdio: 'ignore', timeout: 30_000 });
        const reason =
          probe.error && (probe.error as NodeJS.ErrnoException).code === 'ENOENT'
            ? 'is not on PATH'
            : probe.error
              ? `does not start (${probe.error.message})`
              : probe.status !== 0
                ? `fails (\`${command} ${args.join(' ')}\` exited with ${probe.status ?? probe.signal})`
                : undefined;
        checked = { reason };
      }
      return checked.reason;
    },
  };
}

const DEBIAN_PROMETHEUS = 'Debian/Ubuntu: apt-get install prometheus (it ships promtool too)';

export const DOCKER_COMPOSE = program(
  'docker-compose',
  ['version'],
  'Debian/Ubuntu: apt-get install docker-compose',
);
export const PROMTOOL = program('promtool', ['--version'], DEBIAN_PROMETHEUS);
export const PROMETHEUS = program('prometheus', ['--version'], DEBIAN_PROMETHEUS);

/** Debian's Chromium, which the console's browser tests drive with playwright-core (a devDependency). */
export const CHROMIUM = program(
  process.env.TOOL_LEDGER_CHROMIUM ?? 'chromium',
  ['--version'],
  'Debian/Ubuntu: apt-get install chromium (or set TOOL_LEDGER_CHROMIUM to a Chromium binary)',
);

const announced = new Set<string>();

/**
 * True when the tests that need `requirements` must be skipped here; then prints one line to stderr naming the
 * file, the tests and what to install. Under TOOL_LEDGER_REQUIRE_ALL=1 it throws instead, which fails the file.
 * Call it at module level, once per group of tests: `describe.skipIf(missing(...))`, `it.skipIf(...)`.
 */
export function missing(file: string, tests: string, ...requirements: Requirement[]): boolean {
  const absent = requirements.flatMap((r) => {
    const reason = r.missing();
    return reason === undefined ? [] : [{ r, reason }];
  });
  if (absent.length === 0) return false;
  const what = absent.map(({ r, reason }) => `${r.name} ${reason}`).join(', ');
  const install = [...new Set(absent.map(({ r }) => r.install))].join('; ');
  if (REQUIRE_ALL)
    throw new Error(`TOOL_LEDGER_REQUIRE_ALL=1, but ${file} (${tests}): ${what}. Install: ${install}.`);
  const line = `SKIPPED ${file} (${tests}): ${what}. Install: ${install}.`;
  // Straight to stderr, not console.warn: vitest would wrap a console line in a header of its own, and one
  // line per skipped group is the point.
  if (!announced.has(line)) process.stderr.write(`${line}\n`);
  announced.add(line);
  return true;
}
