import { defineConfig } from 'vitest/config';

// Two projects: `unit` needs no database, so `npm run test:unit` never starts Postgres; `db` is every suite that
// talks to real Postgres, PGlite, child processes or real servers, and gets the Postgres global setup.
const shared = {
  pool: 'forks',
  testTimeout: 60_000,
  hookTimeout: 120_000,
} as const;

// The native operations stack end to end, with its five-minute alert drill: only `npm run test:stack` runs it
// (it sets TOOL_LEDGER_STACK_TEST=1), never plain `npm test`, even on a machine where the stack is built.
// Further files of that kind are named `*.stack.test.ts`.
const STACK_TESTS = ['test/ops/stack.test.ts', 'test/**/*.stack.test.ts'];
const stackOnly = process.env.TOOL_LEDGER_STACK_TEST === '1';

export default defineConfig({
  test: {
    // Several suites start real servers and child processes; two cores is what CI has.
    maxWorkers: 2,
    projects: stackOnly
      ? [
          {
            test: { ...shared, name: 'stack', include: STACK_TESTS, globalSetup: ['test/setup/postgres.ts'] },
          },
        ]
      : [
          { test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'] } },
          {
            test: {
              ...shared,
              name: 'db',
              include: ['test/**/*.test.ts'],
              exclude: ['test/unit/**', ...STACK_TESTS],
              globalSetup: ['test/setup/postgres.ts'],
            },
          },
        ],
  },
});
