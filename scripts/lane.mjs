// What the database lanes share (scripts/test-postgres.mjs, scripts/test-citus.mjs): vitest run on named files
// against a server of the lane's own, which the lane removes afterwards, whatever vitest did.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** `url` with its database replaced by `database`. */
export function withDatabase(url, database) {
  return url.replace(/\/[^/?]*(\?.*)?$/, `/${database}$1`);
}

/**
 * Runs vitest on `files` (named one by one: the vitest projects' own include and exclude lists would override a
 * CLI --exclude) with `env` over this process's, then `cleanup`, and exits with vitest's status. Ctrl-C reaches
 * vitest too, which stops; this process stays to clean up.
 */
export async function runLane({ files, env, args = [], cleanup }) {
  let status = 1;
  try {
    process.on('SIGINT', () => {});
    const vitest = spawnSync(
      process.execPath,
      [join(root, 'node_modules/vitest/vitest.mjs'), 'run', ...files, ...args],
      { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } },
    );
    status = vitest.status ?? 1;
  } finally {
    await cleanup();
  }
  process.exit(status);
}
