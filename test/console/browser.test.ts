/// <reference lib="dom" />
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as cliRun } from '../../src/cli/main.js';
import { type RunningConsole, startConsole } from '../../src/console/index.js';
import { createLedger, type Ledger, OutcomeUnknownError } from '../../src/index.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';
import { CHROMIUM, missing } from '../support/requires.js';
import { launchChromium, seedRuns } from './support.js';

// The console in real Chromium (Debian's, driven by playwright-core), against real Postgres with rows the library
// wrote: search, the run page, the unknown-outcome inbox, keyboard-only use, and hostile stored values.

const FILE = 'test/console/browser.test.ts';
const skip = missing(FILE, 'the console in a browser', CHROMIUM);

const schema = uniqueSchema('console');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const OPERATOR = `operator ana ${'a'.repeat(40)}`;
const VIEWER = `viewer vic ${'v'.repeat(40)}`;
const NEEDLE = 'order-1042-needle';
const HOSTILE_TENANT = '<img src=x onerror="window.__pwned=1">';
const HOSTILE_TOOL = `tool\u001b[2J\u202eexe${'y'.repeat(3000)}`;
const LONG_KEY = `long-${'x'.repeat(5000)}`;

let ledger: Ledger;
let browser: Browser;
let consoleApp: RunningConsole;
let runs = 0;

async function signIn(page: Page, token: string): Promise<void> {
  await page.goto(new URL('/', consoleApp.url).href);
  await page.getByLabel('Token').fill(token.split(' ')[2] as string);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(new URL('/', consoleApp.url).href);
}

async function inspect(key: string): Promise<string> {
  const out: string[] = [];
  await cliRun(['inspect', '--key', key, '--schema', schema], {
    out: (s) => out.push(s),
    err: (s) => out.push(s),
    env: { ...process.env, DATABASE_URL: databaseUrl() },
    readStdin: async () => '',
  });
  return out.join('\n');
}

/**
 * Where the run page's screenshot goes: docs/console.png (the one docs/operations.md shows) only when asked, by
 * `npm run docs:screenshot` (TOOL_LEDGER_DOCS_SCREENSHOT=1); otherwise a temporary directory, so a test run leaves
 * the checkout clean while the screenshot is still taken (and so still shown to work) every time.
 */
function screenshotTarget(): { readonly path: string; done(): void } {
  if (process.env.TOOL_LEDGER_DOCS_SCREENSHOT === '1')
    return { path: join(import.meta.dirname, '../../docs/console.png'), done: () => {} };
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-console-'));
  return { path: join(dir, 'console.png'), done: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Tab until the element matching `selector` has focus, at most `max` presses; true when it got there. */
async function tabTo(page: Page, selector: string, max = 40): Promise<boolean> {
  for (let i = 0; i < max; i++) {
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return true;
    await page.keyboard.press('Tab');
  }
  return false;
}

describe.skipIf(skip)('the ledger console in Chromium', () => {
  beforeAll(async () => {
    ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      telemetry: false,
      ...TEST_DISTRIBUTION,
    });
    const invoice = ledger.tool({
      name: 'create_invoice',
      kind: 'mutation',
      handler: async (input, ctx) => {
        const { customer } = input as { customer: string };
        const made = await ctx.step('create', () => ({ invoiceId: `inv_${customer}` }));
        await ctx.step('email', () => ({ sent: true }));
        return made;
      },
    });
    const charge = ledger.tool({
      name: 'charge_card',
      kind: 'mutation',
      handler: async (_: unknown, ctx) =>
        ctx.step('charge', () => {
          runs++;
          if (runs <= 2) throw new OutcomeUnknownError('the provider hung up after the request was sent');
          return { chargeId: `ch_${runs}` };
        }),
    });
    await seedRuns(pool, schema, 20_000);
    await invoice.call({ customer: 'c_7' }, { key: NEEDLE, tenant: 'acme', user: 'u_42' });
    for (const key of ['charge-by-mouse', 'charge-by-keyboard']) {
      await expect(charge.call({}, { key, tenant: 'acme' })).rejects.toMatchObject({
        code: 'OUTCOME_UNKNOWN',
      });
    }
    await pool.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, result_json, expires_at)
       VALUES ($1, $2, $3, 'h', 'succeeded', $4::json, now() + interval '1 day')`,
      [
        HOSTILE_TENANT,
        HOSTILE_TOOL,
        LONG_KEY,
        JSON.stringify({ html: '<script>window.__pwned=2</script>', x: '"><b>' }),
      ],
    );
    consoleApp = await startConsole({
      connectionString: databaseUrl(),
      schema,
      port: 0,
      allowWrites: true,
      auth: {
        tokens: [OPERATOR, VIEWER].map((line) => {
          const [role, actor, token] = line.split(' ') as ['operator' | 'viewer', string, string];
          return { role, actor, token };
        }),
      },
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await consoleApp?.close();
    await ledger?.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('finds a seeded key among 20,000 runs, and its run page shows the steps; the key is never in a URL', async () => {
    const page = await browser.newPage();
    const urls: string[] = [];
    page.on('request', (r) => urls.push(r.url()));
    await signIn(page, OPERATOR);
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Key').fill(NEEDLE);
    await page.getByRole('button', { name: 'Search' }).click();
    const rows = page.getByRole('table').getByRole('row');
    await expect(rows.count()).resolves.toBe(2);
    await expect(rows.nth(1).textContent()).resolves.toContain(NEEDLE);
    await rows.nth(1).getByRole('link').click();
    await page.waitForURL(/\/runs\/\d+$/);
    const steps = page.getByRole('table', { name: 'Steps' });
    await expect(steps.getByRole('row').count()).resolves.toBe(3);
    await expect(steps.textContent()).resolves.toMatch(/create.*succeeded.*email.*succeeded/s);
    await expect(page.getByText('No trace timeline: start the console with')).toBeDefined();
    expect(urls.filter((u) => u.includes(NEEDLE))).toEqual([]);
    await page.setViewportSize({ width: 1280, height: 900 });
    const shot = screenshotTarget();
    await page.screenshot({ path: shot.path, fullPage: false });
    expect(statSync(shot.path).size).toBeGreaterThan(10_000);
    shot.done();
    await page.close();
  });

  it('resolving an unknown outcome from the inbox records the operator and shows up in inspect', async () => {
    const page = await browser.newPage();
    await signIn(page, OPERATOR);
    await page.getByRole('link', { name: 'Unknown outcomes' }).click();
    const section = page.getByRole('region', { name: /charge_card/ }).filter({ hasText: 'charge-by-mouse' });
    await expect(section.textContent()).resolves.toContain('started, never recorded: charge (attempt 1)');
    await section.getByLabel(/It did not happen, and must not be retried/).check();
    await section.getByLabel(/Failure message/).fill('Not charged: card expired');
    await section.getByLabel(/Reason/).fill('checked in Stripe, ticket 88');
    await section.getByRole('button', { name: 'Resolve' }).click();
    await page.waitForURL(/inbox\/unknown\?done=resolved/);
    await expect(page.getByRole('status').first().textContent()).resolves.toContain('Resolved');
    const shown = await inspect('charge-by-mouse');
    expect(shown).toMatch(/status\s+failed \(final\)/);
    expect(shown).toMatch(
      /settled \(tool_runs_resolved\):\n {2}\S+ as failed by ana: checked in Stripe, ticket 88/,
    );
    await page.close();
  });

  it('works by keyboard alone: search, open a run, and resolve it', async () => {
    const page = await browser.newPage();
    await signIn(page, OPERATOR);
    await page.goto(new URL('/search', consoleApp.url).href);
    expect(await tabTo(page, '#f-key')).toBe(true);
    await page.keyboard.type('charge-by-keyboard');
    await page.keyboard.press('Enter');
    await page.waitForSelector('table');
    expect(await tabTo(page, 'table a')).toBe(true);
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/runs\/\d+$/);
    // The resolution is a radio group: one Tab reaches it, an arrow key moves within it.
    expect(await tabTo(page, 'input[type=radio]')).toBe(true);
    await page.keyboard.press('Space');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowDown');
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement).value)).toBe('rerun');
    expect(await tabTo(page, 'textarea[name=reason]')).toBe(true);
    await page.keyboard.type('provider says not charged');
    expect(await tabTo(page, 'button[type=submit]')).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Resolve');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\?done=resolved$/);
    const { rows } = await pool.query(
      `SELECT status, final FROM "${schema}".tool_runs WHERE idempotency_key = 'charge-by-keyboard'`,
    );
    expect(rows).toEqual([{ status: 'failed', final: false }]);
    await page.close();
  });

  it('renders hostile stored values inert: markup as text, control characters visible, long strings cut', async () => {
    const page = await browser.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    await signIn(page, OPERATOR);
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Tenant').fill(HOSTILE_TENANT);
    await page.getByRole('button', { name: 'Search' }).click();
    const row = page.getByRole('table').getByRole('row').nth(1);
    await expect(row.textContent()).resolves.toContain(HOSTILE_TENANT);
    await expect(row.textContent()).resolves.toContain('tool\\u{1b}[2J\\u{202e}exe');
    await expect(row.textContent()).resolves.toMatch(/y… \(2892 more characters\)/);
    await row.getByRole('link').click();
    await page.waitForURL(/\/runs\/\d+$/);
    await expect(page.locator('main').textContent()).resolves.toContain('<script>window.__pwned=2</script>');
    expect(await page.locator('main img, main script, main b').count()).toBe(0);
    expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    await page.close();
  });

  it('says a forgotten key was forgotten: when, by whom, why', async () => {
    await pool.query(
      `INSERT INTO "${schema}".tool_runs (tenant_id, tool_name, idempotency_key, parameter_hash, status, expires_at)
       VALUES ('acme', 'export_data', 'gone-1', 'h', 'succeeded', now() + interval '1 day')`,
    );
    const out: string[] = [];
    const io = {
      out: (s: string) => out.push(s),
      err: (s: string) => out.push(s),
      env: { ...process.env, DATABASE_URL: databaseUrl() },
      readStdin: async () => '',
    };
    const argv = [
      'forget',
      '--key',
      'gone-1',
      '--yes',
      '--by',
      'bo',
      '--reason',
      'erasure request 9',
      '--schema',
      schema,
    ];
    expect(await cliRun(argv, io)).toBe(0);
    const page = await browser.newPage();
    await signIn(page, OPERATOR);
    await page.getByRole('link', { name: 'Search' }).click();
    await page.getByLabel('Key').fill('gone-1');
    await page.getByRole('button', { name: 'Search' }).click();
    const forgotten = page.getByRole('table', { name: 'This key was forgotten' });
    await expect(forgotten.textContent()).resolves.toMatch(/acme.*export_data.*bo.*erasure request 9/s);
    await page.close();
  });

  it('gives an overview: runs by tool and outcome, the conflict rate beside the alert threshold', async () => {
    const page = await browser.newPage();
    await signIn(page, OPERATOR);
    const cards = await page.locator('.card').allTextContents();
    expect(cards[0]).toBe('Runs created20004');
    expect(cards.find((c) => c.startsWith('Conflict rate'))).toMatch(
      /^Conflict rate0\.\d+%alert above 5\.0%$/,
    );
    const table = page.getByRole('table', { name: /By tool and outcome/ });
    await expect(table.getByRole('row', { name: /create_invoice/ }).textContent()).resolves.toMatch(
      /create_invoice/,
    );
    await page.getByLabel('Window (hours)').selectOption('1');
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/hours=1$/);
    expect(Number((await page.locator('.card').first().textContent())?.replace(/\D/g, ''))).toBeLessThan(
      20004,
    );
    await page.close();
  });

  it('shows a viewer no decision form, and says why', async () => {
    const page = await browser.newPage();
    await signIn(page, VIEWER);
    await page.getByRole('link', { name: 'Unknown outcomes' }).click();
    await expect(page.locator('main').textContent()).resolves.toMatch(/No outcome is unknown|operator role/);
    expect(await page.getByRole('button', { name: 'Resolve' }).count()).toBe(0);
    await page.close();
  });
});
