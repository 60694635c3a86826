/// <reference lib="dom" />
import { join } from 'node:path';
import pg from 'pg';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../src/console/index.js';
import { ROOT } from '../ops/support/configs.js';
import { missingPrograms, type Stack, startProgram, startStack, waitFor } from '../ops/support/stack.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { CHROMIUM, missing } from '../support/requires.js';
import { launchChromium } from './support.js';

// `npm run test:stack` only: the console's run page draws the trace timeline of a key from a real Jaeger and a
// real VictoriaLogs (the native stack), fed by a real caller through the collector.

const FILE = 'test/console/console.stack.test.ts';
const skip = missing(
  FILE,
  'the console against the stack',
  {
    name: 'the native stack',
    install: "`bash scripts/stack/build.sh` (needs Go) and Debian's prometheus, then `npm run test:stack`",
    missing: () => {
      const absent = missingPrograms();
      return absent.length > 0 ? `is incomplete (missing: ${absent.join(', ')})` : undefined;
    },
  },
  CHROMIUM,
);

const schema = uniqueSchema('console_stack');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
let stack: Stack;
let browser: Browser;
let app: RunningConsole;

describe.skipIf(skip)('the console with Jaeger and VictoriaLogs', () => {
  beforeAll(async () => {
    stack = await startStack(1);
    const caller = startProgram(
      'replays',
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'test/console/fixtures/replays.ts')],
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: stack.otlpHttpUrl,
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_BLRP_SCHEDULE_DELAY: '200',
        DATABASE_URL: databaseUrl(),
        LEDGER_SCHEMA: schema,
      },
    );
    await waitFor(
      'the caller to finish',
      async () => (caller.output().includes('DONE') ? true : undefined),
      60_000,
    );
    await caller.stop();
    app = await startConsole({
      connectionString: databaseUrl(),
      schema,
      port: 0,
      jaegerUrl: stack.jaegerUrl,
      logsUrl: stack.logsUrl,
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await stack?.stop();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('draws every call of the key as a waterfall, replays linked to the original execution', async () => {
    const { rows } = await pool.query(
      `SELECT id::text AS id FROM "${schema}".tool_runs WHERE idempotency_key = 'wf-7:charge'`,
    );
    const page = await browser.newPage();
    const url = new URL(`/runs/${rows[0].id}`, app.url).href;
    // Both backends receive in batches: reload until the four calls are there from both (bounded).
    await waitFor(
      'four calls from Jaeger and VictoriaLogs on the run page',
      async () => {
        await page.goto(url);
        const sources = await page.locator('#calls tbody tr td:last-child').allTextContents();
        return sources.length >= 4 && sources.every((s) => s === 'jaeger+logs') ? true : undefined;
      },
      60_000,
      1000,
    );
    const outcomes = await page.locator('#calls tbody tr td:nth-child(2)').allTextContents();
    expect(outcomes).toEqual(['executed', 'replayed', 'replayed', 'conflict']);
    await page.waitForSelector('.waterfall .bar');
    expect(await page.locator('.waterfall .bar').count()).toBe(4);
    // The replays and the conflict follow the original execution (FOLLOWS_FROM): one dashed line each.
    expect(await page.locator('.waterfall svg line').count()).toBe(3);
    await page.close();
  });
});
