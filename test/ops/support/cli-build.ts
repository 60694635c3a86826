import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './configs.js';

/** The real built binary the CLI tests run. */
export const CLI_BIN = join(ROOT, 'dist/cli/main.js');

function newestMtime(dir: string): number {
  return Math.max(
    ...readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => statSync(join(e.parentPath, e.name)).mtimeMs),
  );
}

/**
 * `npm test` builds first; a direct `vitest run test/ops` builds here, and only when dist is missing or older than
 * src: rebuilding a fresh dist would rewrite files other suites are reading.
 */
export function ensureBuiltCli(): void {
  if (existsSync(CLI_BIN) && statSync(CLI_BIN).mtimeMs >= newestMtime(join(ROOT, 'src'))) return;
  execFileSync(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: ROOT,
      stdio: 'pipe',
    },
  );
}
