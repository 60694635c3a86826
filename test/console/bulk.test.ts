/// <reference lib="dom" />
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../src/console/index.js';
import { createLedger, type Ledger, OutcomeUnknownError } from '../../src/index.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';
import { CHROMIUM, missing } from '../support/requires.js';
import { launchChromium } from './support.js';

// Bulk decisions in Chromium: several unknown outcomes settled, and several calls awaiting approval approved or
// declined, each with one reason typed once; every run gets its own audit entry naming the signed-in operator.

const skip = missing('test/console/bulk.test.ts', 'bulk decisions in a browser', CHROMIUM);
const schema = uniqueSchema('console_bulk');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const TOKEN = 'b'.repeat(40);
let ledger: Ledger;
let app: RunningConsole;
let browser: Browser;
const ran: string[] = [];
let charge: ReturnType<typeof chargeTool>;
let transfer: ReturnType<typeof transferTool>;
let unknownOnce = true;

function chargeTool() {
  return ledger.tool({
    name: 'charge_card',
    kind: 'mutation',
    handler: async (_: unknown, ctx) =>
      ctx.step('charge', () => {
        if (unknownOnce) throw new OutcomeUnknownError('the provider hung up after the request was sent');
        return { charged: true };
      }),
  });
}

function transferTool() {
  return ledger.tool({
    name: 'transfer_funds',
    kind: 'mutation',
    approval: 'required',
    handler: async (input: unknown) => {
      const { ref } = input as { ref: string };
      ran.push(ref);
      return { transferId: `tr_${ref}` };
    },
  });
}

async function runId(key: string): Promise<string> {
  const { rows } = await pool.query(
    `SELECT id::text AS id FROM "${schema}".tool_runs WHERE idempotency_key = $1`,
    [key],
  );
  return rows[0].id;
}

async function signIn(page: Page, path: string): Promise<void> {
  await page.goto(new URL(path, app.url).href);
  await page.getByLabel('Token').fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(new URL('/', app.url).href);
  await page.goto(new URL(path, app.url).href);
}

describe.skipIf(skip)('bulk decisions in Chromium', () => {
  beforeAll(async () => {
    ledger = await createLedger({
      connectionString: databaseUrl(),
      schema,
      telemetry: false,
      ...TEST_DISTRIBUTION,
    });
    charge = chargeTool();
    transfer = transferTool();
    app = await startConsole({
      connectionString: databaseUrl(),
      schema,
      port: 0,
      allowWrites: true,
      auth: { tokens: [{ role: 'operator', actor: 'ana', token: TOKEN }] },
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await ledger?.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  });

  it('settles the selected unknown outcomes with one reason, each audited; one settled meanwhile is skipped', async () => {
    const keys = ['outage-1', 'outage-2', 'outage-3', 'outage-keep'];
    for (const key of keys)
      await expect(charge.call({}, { key, tenant: 'acme' })).rejects.toMatchObject({
        code: 'OUTCOME_UNKNOWN',
      });
    const ids = await Promise.all(keys.map(runId));
    const page = await browser.newPage();
    await signIn(page, '/inbox/unknown');
    for (const id of ids.slice(0, 3)) await page.getByLabel(`Select run ${id} for a decision`).check();
    const bulk = page.getByRole('form', { name: 'Settle the selected runs' });
    await bulk.getByLabel(/None of them happened: the next call/).check();
    await bulk.getByLabel(/Reason for all of them/).fill('provider outage 14:02-14:09, nothing charged');
    // Another operator settles outage-3 while this one decides: it is skipped, not settled twice.
    await pool.query(
      `UPDATE "${schema}".tool_runs SET status = 'failed', final = true WHERE idempotency_key = 'outage-3'`,
    );
    await bulk.getByRole('button', { name: 'Resolve selected' }).click();
    await page.waitForURL(/inbox\/unknown\?done=bulk-resolved&n=2&skipped=1&refused=0$/);
    await expect(page.getByRole('alert').first().textContent()).resolves.toBe(
      'Resolved 2 runs, each recorded in the audit with your name and reason. 1 run was skipped: decided or changed meanwhile.',
    );
    const { rows } = await pool.query(
      `SELECT idempotency_key AS key, status, final FROM "${schema}".tool_runs WHERE tool_name = 'charge_card' ORDER BY 1`,
    );
    expect(rows).toEqual([
      { key: 'outage-1', status: 'failed', final: false },
      { key: 'outage-2', status: 'failed', final: false },
      { key: 'outage-3', status: 'failed', final: true },
      { key: 'outage-keep', status: 'unknown', final: false },
    ]);
    // Each settled run's page shows its own audit entry: the operator from the identity, and the one reason.
    for (const id of ids.slice(0, 2)) {
      await page.goto(new URL(`/runs/${id}`, app.url).href);
      await expect(page.locator('main').textContent()).resolves.toMatch(
        /ana[\s\S]*provider outage 14:02-14:09, nothing charged/,
      );
    }
    // A rerun lets the next call with each key run again.
    unknownOnce = false;
    await expect(charge.call({}, { key: 'outage-1', tenant: 'acme' })).resolves.toEqual({ charged: true });
    await page.close();
  });

  it('approves and declines the selected calls with one reason, by keyboard too; each lands in the audit chain', async () => {
    for (const ref of ['p1', 'p2', 'p3', 'p4'])
      await expect(transfer.call({ ref }, { key: `pay-${ref}`, tenant: 'acme' })).rejects.toMatchObject({
        code: 'APPROVAL_REQUIRED',
      });
    const [p1, p2, p3, p4] = await Promise.all(['pay-p1', 'pay-p2', 'pay-p3', 'pay-p4'].map(runId));
    const page = await browser.newPage();
    await signIn(page, '/inbox/approvals');
    await page.getByLabel(`Select run ${p1} for a decision`).check();
    await page.getByLabel(`Select run ${p2} for a decision`).check();
    const bulk = page.getByRole('form', { name: 'Decide on the selected calls' });
    await bulk.getByLabel(/Reason for all of them/).fill('payroll batch 7, checked against the sheet');
    await bulk.getByRole('button', { name: 'Approve selected' }).click();
    await page.waitForURL(/inbox\/approvals\?done=bulk-approved&n=2&skipped=0&refused=0$/);
    await expect(page.getByRole('status').first().textContent()).resolves.toContain('Approved 2 runs');
    await expect(transfer.call({ ref: 'p1' }, { key: 'pay-p1', tenant: 'acme' })).resolves.toEqual({
      transferId: 'tr_p1',
    });
    await expect(transfer.call({ ref: 'p2' }, { key: 'pay-p2', tenant: 'acme' })).resolves.toEqual({
      transferId: 'tr_p2',
    });
    await expect(transfer.call({ ref: 'p2' }, { key: 'pay-p2', tenant: 'acme' })).resolves.toEqual({
      transferId: 'tr_p2',
    });
    expect(ran.sort()).toEqual(['p1', 'p2']);

    // The rest by keyboard: Tab to each box and Space, Tab to the reason, type, Tab to Decline selected, Enter.
    for (const id of [p3, p4]) {
      for (
        let i = 0;
        i < 60 && (await page.evaluate(() => document.activeElement?.id)) !== `bulk-approvals-${id}`;
        i++
      )
        await page.keyboard.press('Tab');
      await page.keyboard.press('Space');
    }
    for (
      let i = 0;
      i < 60 && (await page.evaluate(() => document.activeElement?.id)) !== 'bulk-approvals-reason';
      i++
    )
      await page.keyboard.press('Tab');
    await page.keyboard.type('duplicates of batch 7');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Decline selected');
    await page.keyboard.press('Enter');
    await page.waitForURL(/inbox\/approvals\?done=bulk-declined&n=2&skipped=0&refused=0$/);
    await expect(page.locator('main').textContent()).resolves.toContain('No call awaits approval.');
    await expect(transfer.call({ ref: 'p3' }, { key: 'pay-p3', tenant: 'acme' })).rejects.toMatchObject({
      code: 'APPROVAL_DECLINED',
      message: expect.stringContaining('duplicates of batch 7'),
    });
    expect(ran.sort()).toEqual(['p1', 'p2']);
    const { rows } = await pool.query(
      `SELECT run_id::text AS run, action, actor, reason FROM "${schema}".tool_ledger_audit
       WHERE action IN ('approve', 'decline') ORDER BY id`,
    );
    expect(rows).toEqual([
      { run: p1, action: 'approve', actor: 'ana', reason: 'payroll batch 7, checked against the sheet' },
      { run: p2, action: 'approve', actor: 'ana', reason: 'payroll batch 7, checked against the sheet' },
      { run: p3, action: 'decline', actor: 'ana', reason: 'duplicates of batch 7' },
      { run: p4, action: 'decline', actor: 'ana', reason: 'duplicates of batch 7' },
    ]);
    await page.close();
  });
});
