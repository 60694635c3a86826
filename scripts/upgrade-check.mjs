// The rolling-upgrade check (docs/operations.md "Rolling upgrades"): the previous release (the commit before the
// latest migration was added, built from git history and packed with npm pack, cached in
// ~/.cache/tool-ledger/upgrade/<commit>) and this checkout (packed the same way), each installed from its tarball
// into a project of its own and run as its own process (scripts/upgrade-worker.mjs), side by side on one schema
// migrated by the new code. Contract checks both ways (a call executed by one is replayed by the other; the same key
// with other arguments is refused by both) and a race (the same key sent at once through both processes, half
// each) that must run the handler exactly once across them.
// Run: npm run test:upgrade (builds first). Env: DATABASE_URL (else an embedded Postgres).
import { execFileSync, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startPostgres } from '../bench/postgres.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();

// The latest migration's name, and the commit before the one that added it: the previous release.
const migrations = readFileSync(join(root, 'src/ledger/migrations.ts'), 'utf8');
const latest = [...migrations.matchAll(/name: '([a-z0-9_]+)'/g)].at(-1)?.[1];
if (!latest) throw new Error('no migration name found in src/ledger/migrations.ts');
const added = git('log', '--format=%H', `-Sname: '${latest}'`, '--', 'src/ledger/migrations.ts')
  .split('\n')
  .at(-1);
const previous = git('rev-parse', `${added}^`);
const cache = join(homedir(), '.cache/tool-ledger/upgrade', previous);

const oldBuild = join(cache, 'build');
if (!existsSync(join(oldBuild, 'dist/index.js'))) {
  console.log(
    `building the previous release ${previous.slice(0, 12)} (before migration ${latest}) in ${cache}`,
  );
  rmSync(cache, { recursive: true, force: true });
  mkdirSync(oldBuild, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${previous} | tar -x -C '${oldBuild}'`], { cwd: root });
  // Its compiler and types: this checkout's. What it runs with comes from its own tarball's install (below).
  symlinkSync(join(root, 'node_modules'), join(oldBuild, 'node_modules'));
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: oldBuild,
      stdio: 'inherit',
    },
  );
}

/** `npm pack` of the package in `dir` into `destination`; answers the tarball's path. */
function pack(dir, destination) {
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', destination], {
      cwd: dir,
      encoding: 'utf8',
    }),
  );
  return join(destination, packed.filename);
}

/** A project of its own with the tarball installed (its dependencies from the registry) and the worker beside it. */
function install(tarball, project) {
  mkdirSync(project, { recursive: true });
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'upgrade-side', private: true, type: 'module' }),
  );
  execFileSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock', tarball],
    { cwd: project, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  copyFileSync(join(root, 'scripts/upgrade-worker.mjs'), join(project, 'worker.mjs'));
}

const oldProject = join(cache, 'project');
if (!existsSync(join(oldProject, 'node_modules/tool-ledger/dist/index.js'))) {
  rmSync(oldProject, { recursive: true, force: true });
  install(pack(oldBuild, cache), oldProject);
}
const temp = mkdtempSync(join(tmpdir(), 'tool-ledger-upgrade-'));
const newProject = join(temp, 'project');
install(pack(root, temp), newProject);
// The worker of this checkout, also for the old side: it uses only createLedger, tool and invoke.
copyFileSync(join(root, 'scripts/upgrade-worker.mjs'), join(oldProject, 'worker.mjs'));

const postgres = process.env.DATABASE_URL ? undefined : await startPostgres();
const url = process.env.DATABASE_URL ?? postgres.url;
const schema = `upgrade_${process.pid}`;
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};

/** One side as a process of its own: resolves once its ledger is open (at most 60 s). */
function startSide(project, name) {
  const child = spawn(process.execPath, ['worker.mjs'], {
    cwd: project,
    env: { ...process.env, DATABASE_URL: url, UPGRADE_SCHEMA: schema },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const waiting = new Map();
  let next = 0;
  let ready;
  const started = new Promise((resolve, reject) => {
    ready = resolve;
    setTimeout(() => reject(new Error(`the ${name} side did not open its ledger in 60 s`)), 60_000).unref();
    child.once('exit', (code) => reject(new Error(`the ${name} side exited (${code}) before it was ready`)));
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line);
    if (message.ready) ready();
    else waiting.get(message.id)?.(message);
  });
  const ask = (request) =>
    new Promise((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      child.stdin.write(`${JSON.stringify({ id, ...request })}\n`);
    });
  return started.then(() => ({
    pid: child.pid,
    call: async (key, input) => (await ask({ op: 'call', key, input })).outcome,
    runs: async () => (await ask({ op: 'runs' })).runs,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', resolve);
        child.stdin.end();
      }),
  }));
}

const sides = {};
try {
  // The new code migrates first; the previous release then starts on the migrated schema.
  sides.new = await startSide(newProject, 'new');
  sides.old = await startSide(oldProject, 'old');
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const applied = (await pool.query(`SELECT max(version)::int AS v FROM "${schema}".tool_ledger_migrations`))
    .rows[0].v;
  await pool.end();
  console.log(
    `previous release ${previous.slice(0, 12)} (pid ${sides.old.pid}) beside this build (pid ${sides.new.pid}), each from its packed tarball, on schema ${schema} (at version ${applied})`,
  );
  const runs = async () => (await sides.old.runs()) + (await sides.new.runs());

  for (const [first, second] of [
    ['old', 'new'],
    ['new', 'old'],
  ]) {
    const key = `contract-${first}-first`;
    const before = await runs();
    check((await sides[first].call(key, { n: 1 })) === 'executed', `${first} code executes ${key}`);
    check((await sides[second].call(key, { n: 1 })) === 'replayed', `${second} code replays it`);
    check(
      (await sides[second].call(key, { n: 2 })) === 'KEY_REUSED',
      `${second} code refuses the key with other arguments`,
    );
    check((await sides[first].call(key, { n: 2 })) === 'KEY_REUSED', `${first} code refuses it too`);
    const ran = (await runs()) - before;
    check(ran === 1, `the handler ran once across both processes (${ran})`);
  }

  const before = await runs();
  const race = await Promise.all(
    Array.from({ length: 10 }, (_, i) => sides[i % 2 ? 'old' : 'new'].call('race-1', { n: 7, slowMs: 200 })),
  );
  const ran = (await runs()) - before;
  check(ran === 1, `a race of 10 (old and new processes at once) ran the handler once (${ran})`);
  check(
    race.filter((o) => o === 'executed').length === 1,
    `one executed, the rest: ${[...new Set(race)].join(', ')}`,
  );
  check(
    race.every((o) => o === 'executed' || o === 'replayed'),
    'every racer got the result',
  );
} finally {
  await Promise.allSettled(Object.values(sides).map((side) => side.stop()));
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
  await postgres?.stop();
  rmSync(temp, { recursive: true, force: true });
}
if (failures.length > 0) {
  console.error(`${failures.length} upgrade check(s) failed`);
  process.exit(1);
}
console.log('upgrade check passed');
