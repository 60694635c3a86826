import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');

describe('npm run demo', () => {
  it('plays the agent session on the embedded ledger and prints outcomes and spans', () => {
    const env = { ...process.env };
    delete env.DATABASE_URL;
    delete env.OTEL_EXPORTER_OTLP_ENDPOINT;
    delete env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
    const output = execFileSync(process.execPath, ['--import', 'tsx', 'examples/demo/main.ts'], {
      cwd: root,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    for (const expected of [
      /^1 first call\s.*\sexecuted\s/m,
      /^2 retry after a timeout\s.*\sreplayed\s/m,
      /^3 changed instruction, new key\s.*\sexecuted\s/m,
      /^4 caller bug: key reused\s.*\sKEY_REUSED\s/m,
      /^6 validation failure\s.*\sINPUT_INVALID\s/m,
      /^7 start a long job\s.*\sjob running/m,
      /^9 retry once it finished\s.*\sjob succeeded/m,
      /3 invoices created \(for 8 create_invoice calls\)/,
      /execute_tool create_invoice\s+replayed.*original_execution/,
      // Issue 26: it ends with the trace to look for and the command that shows the key's run.
      /^Follow key inv-req-1 /m,
      /trace id of its original execution: [0-9a-f]{32}\n/,
      /npx tool-ledger inspect --tenant acme --tool create_invoice --key inv-req-1 /,
    ]) {
      expect(output).toMatch(expected);
    }
    expect(output.match(/^5 parallel duplicate #\d\s.*\sexecuted\s/gm)).toHaveLength(1);
    // A plain table: no console.table index column or quoted cells, and the KEY_REUSED message whole.
    expect(output).not.toContain('(index)');
    expect(output).not.toMatch(/'(executed|replayed|KEY_REUSED)'/);
    expect(output.replace(/\s+/g, ' ')).toContain('reuse a key only to retry the exact same request.');
  });
});
