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
      /'1 first call'.*'executed'/,
      /'2 retry after a timeout'.*'replayed'/,
      /'3 changed instruction, new key'.*'executed'/,
      /'4 caller bug: key reused'.*'KEY_REUSED'/,
      /'6 validation failure'.*'INPUT_INVALID'/,
      /'7 start a long job'.*'job running'/,
      /'9 retry once it finished'.*'job succeeded/,
      /3 invoices created \(for 8 create_invoice calls\)/,
      /execute_tool create_invoice\s+replayed.*original_execution/,
    ]) {
      expect(output).toMatch(expected);
    }
    expect(output.match(/'5 parallel duplicate #\d'.*'executed'/g)).toHaveLength(1);
  });
});
