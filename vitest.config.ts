import { defineConfig } from 'vitest/config';

// Two projects: `unit` needs no database, so `npm run test:unit` never starts Postgres; `db` is every suite that
// talks to real Postgres, PGlite, child processes or real servers, and gets the Postgres global setup.
const shared = {
  pool: 'forks',
  testTimeout: 60_000,
  hookTimeout: 120_000,
} as const;

export default defineConfig({
  test: {
    // Several suites start real servers and child processes; two cores is what CI has.
    maxWorkers: 2,
    projects: [
      { test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        test: {
          ...shared,
          name: 'db',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**'],
          globalSetup: ['test/setup/postgres.ts'],
        },
      },
    ],
  },
});
