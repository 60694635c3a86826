import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { readText } from './configs.js';

export interface ExplorerAccess {
  readonly explorerSchema: string;
  readonly reader: string;
  /** A pool that logs in as the read-only role, the way Grafana's datasource does. */
  readonly readerPool: pg.Pool;
  /** The same login as a URL, for a pool with other session settings. */
  readonly readerUrl: string;
  drop(): Promise<void>;
}

const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * Runs postgres/explorer.sql through pg, substituting its psql variables (`:'name'`, a quoted literal) the way
 * `psql -v name=value` does, so the tests need no psql. The role is cluster-wide, so its name is unique per
 * run, and drop() removes it again.
 */
export async function setUpExplorer(
  admin: pg.Pool,
  databaseUrl: string,
  ledgerSchema: string,
  keyHashSecret: string,
  explorerSchema = `${ledgerSchema}_explorer`,
): Promise<ExplorerAccess> {
  const suffix = randomBytes(5).toString('hex');
  const reader = `tl_reader_${suffix}`;
  const password = randomBytes(12).toString('hex');
  const vars: Record<string, string> = {
    ledger_schema: ledgerSchema,
    explorer_schema: explorerSchema,
    reader,
    reader_password: password,
    key_hash_secret: keyHashSecret,
  };
  const sql = readText('postgres/explorer.sql').replace(/:'([a-z_]+)'/g, (match, name: string) => {
    const value = vars[name];
    if (value === undefined) throw new Error(`postgres/explorer.sql uses an unknown variable ${match}`);
    return literal(value);
  });
  await admin.query(sql);
  const url = new URL(databaseUrl);
  url.username = reader;
  url.password = password;
  const readerPool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  return {
    explorerSchema,
    reader,
    readerPool,
    readerUrl: url.toString(),
    async drop() {
      await readerPool.end();
      await admin.query(`DROP SCHEMA IF EXISTS "${explorerSchema}" CASCADE`);
      await admin.query(`DROP OWNED BY "${reader}"`);
      await admin.query(`DROP ROLE IF EXISTS "${reader}"`);
    },
  };
}

export interface SqlVars {
  tenant?: string;
  tool?: string;
  key?: string;
}

/** Grafana's `:percentencode`: encodeURIComponent, and !'()* encoded too. */
export function percentEncode(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * Grafana's interpolation for the variables and macros the explorer's queries use: `${name:percentencode}` as
 * Grafana encodes it (the query decodes it with url_decoded), `$__timeFilter(col)` becomes a BETWEEN. Any other
 * variable form is an error, so a new one gets a test before it ships.
 */
export function fillExplorerSql(sql: string, vars: SqlVars, from: Date, to: Date): string {
  const values: Record<string, string> = {
    tenant: vars.tenant ?? '',
    tool: vars.tool ?? '',
    key: vars.key ?? '',
  };
  return sql
    .replace(/\$__timeFilter\(([^)]+)\)/g, (_m, column: string) => {
      return `${column.trim()} BETWEEN '${from.toISOString()}' AND '${to.toISOString()}'`;
    })
    .replace(/\$\{([A-Za-z_]+)(?::([a-z]+))?\}|\$([A-Za-z_]+)/g, (match, braced, format, bare) => {
      const name = (braced ?? bare) as string;
      const value = values[name];
      if (value === undefined) throw new Error(`unknown variable ${match} in ${sql}`);
      if (format !== 'percentencode')
        throw new Error(`variable ${match} is not formatted with :percentencode`);
      return percentEncode(value);
    });
}
