import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { createLedger } from '../../src/index.js';
import type { Driver } from '../../src/ledger/driver.js';
import type { PgPoolLike } from '../../src/ledger/drivers/pg/client.js';
import { pgDriver } from '../../src/ledger/drivers/pg/pg-driver.js';
import { type PGliteLike, pgliteDriver } from '../../src/ledger/drivers/pglite.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from './db.js';

/** A migrated schema and a bare driver on it, for tests of the store's statements below the middleware. */
export interface OpenedDriver {
  readonly driver: Driver;
  readonly schema: string;
  /** Distributed with Citus (the Citus lane): a `LedgerStore` on it must be told, as `createLedger` tells its own. */
  readonly distributed: boolean;
  done(): Promise<void>;
}

export const rawDrivers: Array<[string, (prefix: string) => Promise<OpenedDriver>]> = [
  [
    'postgres',
    async (prefix) => {
      const schema = uniqueSchema(prefix);
      await (
        await createLedger({
          connectionString: databaseUrl(),
          schema,
          telemetry: false,
          ...TEST_DISTRIBUTION,
        })
      ).close();
      const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4 });
      return {
        driver: pgDriver(pool as unknown as PgPoolLike, {
          ownsPool: true,
          preparedStatements: true,
          answerTimeoutMs: 10_000,
        }),
        schema,
        distributed: TEST_DISTRIBUTION.distribute === true,
        done: async () => {
          const admin = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
          await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await admin.end();
        },
      };
    },
  ],
  [
    'pglite',
    async (prefix) => {
      const db = new PGlite();
      const schema = uniqueSchema(prefix);
      await (await createLedger({ pglite: db as never, schema, telemetry: false })).close();
      return {
        driver: pgliteDriver(db as unknown as PGliteLike, true),
        schema,
        distributed: false,
        done: async () => {},
      };
    },
  ],
];
