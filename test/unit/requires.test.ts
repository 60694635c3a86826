import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * test/support/requires.ts, in processes of their own so TOOL_LEDGER_REQUIRE_ALL is whatever each case sets (CI
 * sets it for the whole run): a missing program skips with one line, or fails the file under the variable.
 */

const root = join(import.meta.dirname, '../..');

function probe(requireAll: boolean): { status: number | null; stdout: string; stderr: string } {
  const code = [
    "import { missing, program } from './test/support/requires.ts';",
    "const absent = program('tool-ledger-no-such-program', ['--version'], 'apt-get install nothing');",
    "const present = program(process.execPath, ['--version'], 'never shown');",
    "console.log(JSON.stringify({ present: missing('a.test.ts', 'the node checks', present),",
    "  absent: missing('a.test.ts', 'the checks', absent), again: missing('a.test.ts', 'the checks', absent) }));",
  ].join('\n');
  const { TOOL_LEDGER_REQUIRE_ALL: _set, ...env } = process.env;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: root,
    encoding: 'utf8',
    env: requireAll ? { ...env, TOOL_LEDGER_REQUIRE_ALL: '1' } : env,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('the skip helper', () => {
  it('skips tests whose program is absent, with one line naming it and what to install', () => {
    const { status, stdout, stderr } = probe(false);
    expect(status).toBe(0);
    expect(JSON.parse(stdout)).toEqual({ present: false, absent: true, again: true });
    expect(stderr).toBe(
      'SKIPPED a.test.ts (the checks): tool-ledger-no-such-program is not on PATH. Install: apt-get install nothing.\n',
    );
  });

  it('fails instead under TOOL_LEDGER_REQUIRE_ALL=1', () => {
    const { status, stdout, stderr } = probe(true);
    expect(status).not.toBe(0);
    expect(stdout).toBe('');
    expect(stderr).toContain(
      'TOOL_LEDGER_REQUIRE_ALL=1, but a.test.ts (the checks): tool-ledger-no-such-program is not on PATH. Install: apt-get install nothing.',
    );
  });
});
