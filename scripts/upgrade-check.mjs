// The rolling-upgrade check (docs/operations.md "Rolling upgrades"): the previous release's code (the commit before
// the latest migration was added, built from git history and cached in ~/.cache/tool-ledger/upgrade/<commit>) and
// this checkout's build, side by side on one schema migrated by the new code. Contract checks both ways (a call
// executed by one is replayed by the other; the same key with other arguments is refused by both) and a race (the
// same key sent at once through both, half each) that must run the handler exactly once.
// Run: npm run test:upgrade (builds first). Env: DATABASE_URL (else an embedded Postgres).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
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

if (!existsSync(join(cache, 'dist/index.js'))) {
  console.log(
    `building the previous release ${previous.slice(0, 12)} (before migration ${latest}) in ${cache}`,
  );
  rmSync(cache, { recursive: true, force: true });
  mkdirSync(cache, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${previous} | tar -x -C '${cache}'`], { cwd: root });
  // Its dependencies: this checkout's (the runtime ones the ledger uses have not changed across a release).
  symlinkSync(join(root, 'node_modules'), join(cache, 'node_modules'));
  execFileSync(
    process.execPath,
    [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: cache,
      stdio: 'inherit',
    },
  );
}

const postgres = process.env.DATABASE_URL ? undefined : await startPostgres();
const url = process.env.DATABASE_URL ?? postgres.url;
const schema = `upgrade_${process.pid}`;
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};

const NEW = await import(join(root, 'dist/index.js'));
const OLD = await import(join(cache, 'dist/index.js'));
let runs = 0;
const handler = async (input) => {
  runs++;
  await new Promise((resolve) => setTimeout(resolve, input.slowMs ?? 0));
  return { done: input.n };
};

let fresh;
let old;
try {
  // The new code migrates first; the previous release then starts on the migrated schema.
  fresh = await NEW.createLedger({ connectionString: url, schema });
  old = await OLD.createLedger({ connectionString: url, schema });
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  const applied = (await pool.query(`SELECT max(version)::int AS v FROM "${schema}".tool_ledger_migrations`))
    .rows[0].v;
  await pool.end();
  console.log(
    `previous release ${previous.slice(0, 12)} beside this build on schema ${schema} (at version ${applied})`,
  );

  const tools = {
    new: fresh.tool({ name: 'transfer', kind: 'mutation', handler }),
    old: old.tool({ name: 'transfer', kind: 'mutation', handler }),
  };
  const call = (side, key, input) =>
    tools[side].invoke(input, { key, tenant: 'acme' }).then(
      (report) => report.outcome,
      (error) => error.code ?? String(error),
    );

  for (const [first, second] of [
    ['old', 'new'],
    ['new', 'old'],
  ]) {
    const key = `contract-${first}-first`;
    runs = 0;
    check((await call(first, key, { n: 1 })) === 'executed', `${first} code executes ${key}`);
    check((await call(second, key, { n: 1 })) === 'replayed', `${second} code replays it`);
    check(
      (await call(second, key, { n: 2 })) === 'KEY_REUSED',
      `${second} code refuses the key with other arguments`,
    );
    check((await call(first, key, { n: 2 })) === 'KEY_REUSED', `${first} code refuses it too`);
    check(runs === 1, `the handler ran once (${runs})`);
  }

  runs = 0;
  const race = await Promise.all(
    Array.from({ length: 10 }, (_, i) => call(i % 2 ? 'old' : 'new', 'race-1', { n: 7, slowMs: 200 })),
  );
  check(runs === 1, `a race of 10 (old and new at once) ran the handler once (${runs})`);
  check(
    race.filter((o) => o === 'executed').length === 1,
    `one executed, the rest: ${[...new Set(race)].join(', ')}`,
  );
  check(
    race.every((o) => o === 'executed' || o === 'replayed'),
    'every racer got the result',
  );
} finally {
  await old?.close();
  await fresh?.close();
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
  await postgres?.stop();
}
if (failures.length > 0) {
  console.error(`${failures.length} upgrade check(s) failed`);
  process.exit(1);
}
console.log('upgrade check passed');
