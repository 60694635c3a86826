import type pg from 'pg';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium, headless (playwright gives it a fresh profile), with none of its calls home. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.TOOL_LEDGER_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/**
 * Fills a ledger table with `count` synthetic finished runs over the last `spreadHours`, spread over tenants and
 * tools, in one statement: the haystack a search must find its needle in.
 */
export async function seedRuns(
  pool: pg.Pool,
  schema: string,
  count: number,
  options: { readonly spreadHours?: number; readonly prefix?: string } = {},
): Promise<void> {
  await pool.query(
    `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, user_id, parameter_hash, status, final,
       attempt, result_json, created_at, started_at, updated_at, completed_at, expires_at, conflict_count)
     SELECT 'tenant-' || (i % 50), 'tool_' || (i % 7), $2 || i, 'u_' || (i % 1000), md5(i::text),
       CASE WHEN i % 97 = 0 THEN 'failed' ELSE 'succeeded' END, i % 97 = 0, 1, '{"ok":true}'::json,
       t, t, t, t, t + interval '1 day', CASE WHEN i % 211 = 0 THEN 1 ELSE 0 END
     FROM generate_series(1, $1::integer) AS i,
       LATERAL (SELECT now() - (i::float8 / $1::integer) * ($3::float8 * interval '1 hour') AS t) AS times`,
    [count, options.prefix ?? 'synthetic-', options.spreadHours ?? 12],
  );
  await pool.query(`ANALYZE "${schema}".tool_runs`);
}
