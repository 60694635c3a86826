import { describe, expect, it } from 'vitest';
import { runNode } from './support/built.js';

describe('examples/openai-agent', () => {
  it('runs offline with the scripted model, and the resumed run sends one email, not two', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, LEDGER_PGLITE: 'memory://' };
    delete env.OPENAI_API_KEY;
    const run = await runNode(['--import', 'tsx', 'examples/openai-agent/agent.ts'], {
      env,
      timeoutMs: 120_000,
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('1. run paused for approval: send_email');
    expect(
      run.stdout.match(/^2\. worker .* resumed the saved run: Invoice created and emailed/gm),
    ).toHaveLength(2);
    expect(run.stdout).toContain(
      '3. invoices created: 1, emails sent: 1 (billing@customer.example: Your invoice)',
    );
  });
});
