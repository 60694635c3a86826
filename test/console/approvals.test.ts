/// <reference lib="dom" />
import pg from 'pg';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningConsole, startConsole } from '../../src/console/index.js';
import { createLedger, type Ledger } from '../../src/index.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { CHROMIUM, missing } from '../support/requires.js';
import { launchChromium } from './support.js';

// The approvals inbox in Chromium: a call that needs a person waits; an operator approves it in the console; the
// agent's retry runs the tool exactly once, and later retries replay. A decline, by keyboard alone, is final.

const skip = missing('test/console/approvals.test.ts', 'the approvals inbox in a browser', CHROMIUM);
const schema = uniqueSchema('console_approvals');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 2 });
const TOKEN = 'p'.repeat(40);
let ledger: Ledger;
let app: RunningConsole;
let browser: Browser;
let runs = 0;
let transfer: ReturnType<typeof transferTool>;

function transferTool() {
  return ledger.tool({
    name: 'transfer_funds',
    kind: 'mutation',
    approval: 'required',
    handler: async (input: unknown) => {
      runs++;
      return { transferId: `tr_${runs}`, input };
    },
  });
}

async function signIn(page: Page): Promise<void> {
  await page.goto(new URL('/inbox/approvals', app.url).href);
  await page.getByLabel('Token').fill(TOKEN);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(new URL('/', app.url).href);
  await page.getByRole('link', { name: 'Approvals' }).click();
}

describe.skipIf(skip)('the approvals inbox in Chromium', () => {
  beforeAll(async () => {
    ledger = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
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

  it('an approval from the inbox lets the agent’s retry run exactly once', async () => {
    const input = { amountCents: 125_000, to: 'maria@example.com' };
    const session = { tenant: 'acme', key: 'payout-77', user: 'agent-1' };
    await expect(transfer.call(input, session)).rejects.toMatchObject({ code: 'APPROVAL_REQUIRED' });
    expect(runs).toBe(0);
    const page = await browser.newPage();
    await signIn(page);
    const item = page.getByRole('region', { name: /transfer_funds/ }).filter({ hasText: 'payout-77' });
    const shown = await item.textContent();
    expect(shown).toContain('125000');
    expect(shown).not.toContain('maria@example.com');
    await item.getByLabel(/Reason/).fill('verified with the customer by phone');
    await item.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(/inbox\/approvals\?done=approved$/);
    // The call that runs the handler after an approval reports it as 'approved' (docs/telemetry.md).
    await expect(transfer.invoke(input, session)).resolves.toMatchObject({ outcome: 'approved' });
    await expect(transfer.invoke(input, session)).resolves.toMatchObject({ outcome: 'replayed' });
    expect(runs).toBe(1);
    const { rows } = await pool.query(
      `SELECT actor, action, reason FROM "${schema}".tool_ledger_audit WHERE action = 'approve'`,
    );
    expect(rows).toEqual([
      { actor: 'ana', action: 'approve', reason: 'verified with the customer by phone' },
    ]);
    await page.close();
  });

  it('declines by keyboard alone, and the agent gets the reason', async () => {
    const session = { tenant: 'acme', key: 'payout-78' };
    await expect(transfer.call({ amountCents: 9_999_999 }, session)).rejects.toMatchObject({
      code: 'APPROVAL_REQUIRED',
    });
    const page = await browser.newPage();
    await signIn(page);
    const reason = page.getByRole('region').filter({ hasText: 'payout-78' }).locator('textarea[name=reason]');
    const reasonId = await reason.getAttribute('id');
    for (let i = 0; i < 40 && (await page.evaluate(() => document.activeElement?.id)) !== reasonId; i++)
      await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(reasonId);
    await page.keyboard.type('over the daily limit');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Decline');
    await page.keyboard.press('Enter');
    await page.waitForURL(/inbox\/approvals\?done=declined$/);
    await expect(transfer.call({ amountCents: 9_999_999 }, session)).rejects.toMatchObject({
      code: 'APPROVAL_DECLINED',
      message: expect.stringContaining('over the daily limit'),
    });
    expect(runs).toBe(1);
    await page.close();
  });
});
