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

/** A fresh schema name per test, so suites never see each other's rows. */
export function uniqueSchema(prefix = 't'): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
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

export const backends = [
  ['postgres', postgresBackend],
  ['pglite', pgliteBackend],
] as const;
