// The package as it was at an earlier commit, for benches that compare a change with the code before it: the
// commit's tree from git history (git archive), built with this checkout's TypeScript and dependencies, cached in
// ~/.cache/tool-ledger/builds/<commit> so a second run reuses it. scripts/upgrade-check.mjs does the same for the
// previous release.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
export const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

/**
 * The parent of the oldest commit whose diff of `path` adds or removes `text` (git log -S): the code just before a
 * feature arrived. Undefined when history does not have it (a shallow clone).
 */
export function commitBefore(text, path) {
  try {
    const added = git('log', '--format=%H', `-S${text}`, '--', path).split('\n').filter(Boolean).at(-1);
    return added ? git('rev-parse', `${added}^`) : undefined;
  } catch {
    return undefined;
  }
}

/** The built package of `commit`: the path of its dist/index.js, built once and cached. */
export function buildAt(commit) {
  const dir = join(homedir(), '.cache/tool-ledger/builds', commit);
  const entry = join(dir, 'dist/index.js');
  if (existsSync(entry)) return entry;
  console.log(`building ${commit.slice(0, 12)} in ${dir}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C '${dir}'`], { cwd: root });
  // Its runtime dependencies are this checkout's: pg and the OpenTelemetry API have not moved under it.
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: dir,
      stdio: 'inherit',
    },
  );
  return entry;
}
