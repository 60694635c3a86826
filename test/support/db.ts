import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll } from 'vitest';
import { createLedger, type Ledger, type LedgerOptions } from '../../src/index.js';
import { openPGlite, type PGliteLike } from '../../src/ledger/drivers/pglite.js';

export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: the vitest global setup should have started Postgres.');
  return url;
}

/**
 * The Citus lane (scripts/test-citus.mjs) sets TOOL_LEDGER_TEST_DISTRIBUTE=1: `DATABASE_URL` is then a Citus
 * coordinator, and every ledger the suites open on Postgres distributes its schema by tenant (`distribute: true`),
 * so the suites run on distributed tables. Spread into a test's own `createLedger` options.
 */
export const TEST_DISTRIBUTION: { readonly distribute?: true } =
  process.env.TOOL_LEDGER_TEST_DISTRIBUTE === '1' ? { distribute: true } : {};
const DISTRIBUTED = TEST_DISTRIBUTION.distribute === true;

/** A fresh schema name per test, so suites never see each other's rows. */
export function uniqueSchema(prefix = 't'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

/**
 * Schemas a file makes itself (not through a backend), each dropped after the file's tests, and a pool on the test
 * database to make and read them with.
 */
export function ownSchemas(prefix: string): { readonly admin: pg.Pool; fresh(): string } {
  const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
  const schemas: string[] = [];
  afterAll(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  });
  return {
    admin,
    fresh() {
      schemas.push(uniqueSchema(prefix));
      return schemas.at(-1)!;
    },
  };
}

export interface Backend {
  readonly name: 'postgres' | 'pglite';
  /** Opens a ledger in a schema of its own. */
  open(options?: LedgerOptions): Promise<Ledger & { schema: string }>;
  /** Runs SQL on the same database as the ledgers (for assertions and side-effect tables). */
  sql<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
}

/**
 * Real Postgres through pg. Schemas are dropped after the file's tests. `defaults` go under every ledger's own
 * options (the partitioned layout's suite passes its layout here).
 */
export function postgresBackend(defaults: LedgerOptions = {}): Backend {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4 });
  const schemas: string[] = [];
  const ledgers: Ledger[] = [];
  afterAll(async () => {
    await Promise.allSettled(ledgers.map((l) => l.close({ timeoutSeconds: 0.5 })));
    for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });
  return {
    name: 'postgres',
    async open(options = {}) {
      const schema = options.schema ?? uniqueSchema();
      schemas.push(schema);
      const ledger = await createLedger({
        connectionString: databaseUrl(),
        telemetry: false,
        ...(defaults.layout === 'partitioned' ? {} : TEST_DISTRIBUTION),
        ...defaults,
        ...options,
        schema,
      });
      ledgers.push(ledger);
      return { ...ledger, schema };
    },
    async sql(text, params) {
      return (await pool.query(text, params)).rows;
    },
  };
}

/** The embedded path: one in-memory PGlite per file, opened as the embedded default opens it (saved initdb, settings). */
export function pgliteBackend(): Backend {
  // Created on first use: starting PGlite compiles WebAssembly, which would stall other suites' timings.
  let instance: Promise<PGliteLike> | undefined;
  const database = () => {
    instance ??= openPGlite('memory://');
    return instance;
  };
  const ledgers: Ledger[] = [];
  afterAll(async () => {
    await Promise.allSettled(ledgers.map((l) => l.close({ timeoutSeconds: 0.5 })));
    await (await instance)?.close();
  });
  return {
    name: 'pglite',
    async open(options = {}) {
      const schema = options.schema ?? uniqueSchema();
      const ledger = await createLedger({
        pglite: (await database()) as never,
        telemetry: false,
        ...options,
        schema,
      });
      ledgers.push(ledger);
      return { ...ledger, schema };
    },
    async sql(text, params) {
      return (await (await database()).query(text, params)).rows as never;
    },
  };
}

/** Postgres with `tool_runs` range-partitioned by expiry (hour-wide partitions, so tests cross boundaries). */
export function partitionedPostgresBackend(): Backend {
  return postgresBackend({ layout: 'partitioned', partitionWidthSeconds: 3600 });
}

/**
 * The backends the contract suites run on. On the Citus lane only Postgres, the coordinator: PGlite and the
 * partitioned layout (which Citus cannot distribute, see docs/operations.md) have nothing to show there.
 */
export const backends = (
  DISTRIBUTED
    ? [['postgres', postgresBackend]]
    : [
        ['postgres', postgresBackend],
        ['pglite', pgliteBackend],
      ]
) as ReadonlyArray<readonly ['postgres' | 'pglite', () => Backend]>;

/** The contract's layouts: `backends`, then the partitioned layout on Postgres but on the Citus lane. */
export const layouts = (
  DISTRIBUTED ? backends : [...backends, ['postgres, partitioned layout', partitionedPostgresBackend]]
) as ReadonlyArray<readonly [string, () => Backend]>;
