import { execFileSync, spawnSync } from 'node:child_process';
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

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built CLI with `args`, `DATABASE_URL` set to `databaseUrl`, bounded in time. */
export function runCli(args: readonly string[], databaseUrl: string): CliRun {
  const r = spawnSync(process.execPath, [CLI_BIN, ...args], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
