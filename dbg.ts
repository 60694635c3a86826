import { startConsole } from './src/console/index.js';
import { launchChromium } from './test/console/support.js';

const c = await startConsole({
  connectionString: process.env.DATABASE_URL!,
  schema: process.argv[2]!,
  port: 0,
  allowWrites: true,
  auth: { tokens: [{ role: 'operator', actor: 'ana', token: 'a'.repeat(40) }] },
  log: console.error,
});
const b = await launchChromium();
const p = await b.newPage();
await p.goto(c.url.href);
console.log(await p.title());
await p.getByLabel('Token').fill('a'.repeat(40));
await p.getByRole('button', { name: 'Sign in' }).click();
await p.waitForTimeout(1000);
console.log(p.url(), await p.title(), (await p.textContent('main'))?.slice(0, 300));
await b.close();
await c.close();
