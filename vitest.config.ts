import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

/**
 * The suites import the OpenTelemetry SDK 2.x packages (the devDependencies). On the 3.x line, which the
 * newest-majors lane installs (.ci/newest.sh), sdk-trace-base is gone (sdk-trace replaces it) and the logs API is
 * part of @opentelemetry/api 1.10: those imports are pointed at their 3.x homes, so the same tests run on both.
 */
function otel3Aliases(): Record<string, string> {
  const require = createRequire(import.meta.url);
  try {
    require.resolve('@opentelemetry/sdk-trace-base');
    return {};
  } catch {
    return {
      '@opentelemetry/sdk-trace-base': new URL('./test/support/otel3/sdk-trace-base.mjs', import.meta.url)
        .pathname,
      '@opentelemetry/api-logs': '@opentelemetry/api',
    };
  }
}

// Two projects: `unit` needs no database, so `npm run test:unit` never starts Postgres; `db` is every suite that
// talks to real Postgres, PGlite, child processes or real servers, and gets the Postgres global setup.
const shared = {
  pool: 'forks',
  testTimeout: 60_000,
  hookTimeout: 120_000,
} as const;

const resolve = { alias: otel3Aliases() };

// The native operations stack end to end, with its five-minute alert drill: only `npm run test:stack` runs it
// (it sets TOOL_LEDGER_STACK_TEST=1), never plain `npm test`, even on a machine where the stack is built.
// Further files of that kind are named `*.stack.test.ts`.
const STACK_TESTS = ['test/ops/stack.test.ts', 'test/**/*.stack.test.ts'];
const stackOnly = process.env.TOOL_LEDGER_STACK_TEST === '1';
// test/citus needs a Citus coordinator as DATABASE_URL: only the Citus lane (`npm run test:citus`, which sets
// TOOL_LEDGER_CITUS_TEST=1) runs it.
const CITUS_TESTS = process.env.TOOL_LEDGER_CITUS_TEST === '1' ? [] : ['test/citus/**'];

export default defineConfig({
  test: {
    // Several suites start real servers and child processes; two cores is what CI has.
    maxWorkers: 2,
    // Tests a failed beforeAll kept from running are named as failures, not counted with the skips.
    reporters: ['default', './test/support/unrun-tests-reporter.ts'],
    projects: stackOnly
      ? [
          {
            resolve,
            test: { ...shared, name: 'stack', include: STACK_TESTS, globalSetup: ['test/setup/postgres.ts'] },
          },
        ]
      : [
          { resolve, test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'] } },
          {
            resolve,
            test: {
              ...shared,
              name: 'db',
              include: ['test/**/*.test.ts'],
              exclude: ['test/unit/**', ...STACK_TESTS, ...CITUS_TESTS],
              globalSetup: ['test/setup/postgres.ts'],
            },
          },
        ],
  },
});
