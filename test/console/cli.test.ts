import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger } from '../../src/index.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';

// `tool-ledger console` as users run it (from source): it prints the URL it serves, stops on SIGTERM, and refuses
// what it must before listening.

const CLI = join(import.meta.dirname, '../../src/cli/main.ts');
const schema = uniqueSchema('console_cli');
const env = { ...process.env, DATABASE_URL: databaseUrl() };

beforeAll(async () => {
  const ledger = await createLedger({
    connectionString: databaseUrl(),
    schema,
    telemetry: false,
    ...TEST_DISTRIBUTION,
  });
  await ledger.close();
});
afterAll(async () => {
  const pool = new pg.Pool({ connectionString: databaseUrl() });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

describe('tool-ledger console', () => {
  it('prints the URL it serves, read-only by default, and stops on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', CLI, 'console', '--port', '0', '--schema', schema],
      {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no URL within 30 s: ${stderr}`)), 30_000);
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /serving (http:\/\/127\.0\.0\.1:\d+\/) \(read-only, no sign-in: loopback only\)/.exec(
          stderr,
        );
        if (match) {
          clearTimeout(timer);
          resolve(match[1] as string);
        }
      });
    });
    const page = await fetch(url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<span class="badge">read-only</span>');
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('refuses a public address without auth, and --operator without --allow-writes', () => {
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', CLI, 'console', '--schema', schema, ...args], {
        env,
        encoding: 'utf8',
        timeout: 30_000,
      });
    const open = run('--host', '0.0.0.0', '--port', '0');
    expect(open.status).toBe(1);
    expect(open.stderr).toContain('Without authentication the console listens on loopback only');
    const operator = run('--operator', 'ana');
    expect(operator.status).toBe(2);
    expect(operator.stderr).toContain('--operator names who decides: it needs --allow-writes.');
  });
});
