import { execFileSync, spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeBlocks } from '../support/markdown.js';

/**
 * The README's TypeScript examples, as a user copies them: type-checked under strict TypeScript from a project
 * outside the package, once as an ES module project and once as a CommonJS one (`npm init -y`), against the
 * built package through its exports map.
 */

const root = join(import.meta.dirname, '../..');
const TSC = join(root, 'node_modules/typescript/bin/tsc');

// What the examples leave to the reader, declared as a user's project has it.
// (Nothing now: the "Use" example defines its own stand-in for the payment client it calls.)
const READER_DECLARES = '';

type Mode = 'module' | 'commonjs';

/** A project of its own, with the package and the examples' other imports linked in as npm would install them. */
function consumer(mode: Mode, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), `tool-ledger-readme-${mode}-`));
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: `readme-${mode}`, private: true, type: mode }),
  );
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'es2022',
        types: ['node'],
        noEmit: true,
        // As most projects have it; checking every dependency's declarations takes a minute per run here, and
        // the package's own come from sources `npm run typecheck` checks.
        skipLibCheck: true,
      },
      include: ['*.ts'],
    }),
  );
  mkdirSync(join(dir, 'node_modules/@types'), { recursive: true });
  symlinkSync(root, join(dir, 'node_modules/tool-ledger'), 'dir');
  symlinkSync(join(root, 'node_modules/zod'), join(dir, 'node_modules/zod'), 'dir');
  // The AI SDK approval example imports `ai`, as a user of `tool-ledger/ai-sdk` has it installed.
  symlinkSync(join(root, 'node_modules/ai'), join(dir, 'node_modules/ai'), 'dir');
  symlinkSync(join(root, 'node_modules/@types/node'), join(dir, 'node_modules/@types/node'), 'dir');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

function typecheck(dir: string): { status: number | null; output: string } {
  const run = spawnSync(process.execPath, [TSC, '-p', dir], { encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

const dirs: string[] = [];

describe("the README's TypeScript examples", () => {
  const blocks = codeBlocks(readFileSync(join(root, 'README.md'), 'utf8'), 'ts');
  const files = Object.fromEntries([
    ['reader.d.ts', READER_DECLARES],
    // Each block is a module of its own (each has imports), as a user's file would be.
    ...blocks.map((block, i) => [`example-${i + 1}.ts`, block]),
  ]);

  beforeAll(() => {
    if (!existsSync(join(root, 'dist/index.d.ts'))) execFileSync('npm', ['run', 'build'], { cwd: root });
  });

  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('are there: the Use example and the telemetry bootstrap', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    expect(blocks.some((b) => b.includes("from 'tool-ledger'") && b.includes('.invoke('))).toBe(true);
    expect(blocks.some((b) => b.includes("from 'tool-ledger/otel'"))).toBe(true);
  });

  it.each(['module', 'commonjs'] as const)('compile under strict TypeScript in a %s project', (mode) => {
    const dir = consumer(mode, files);
    dirs.push(dir);
    const { status, output } = typecheck(dir);
    expect(output).toBe('');
    expect(status).toBe(0);
  });

  it('would fail on what a copy used to trip over: top-level await in CommonJS, an incomplete outcome list', () => {
    const dir = consumer('commonjs', {
      'bad.ts': [
        "import { createLedger } from 'tool-ledger';",
        'const ledger = await createLedger({});',
        "const tool = ledger.tool({ name: 't', kind: 'mutation', handler: async () => 1 });",
        "export const outcome: 'executed' | 'replayed' = (await tool.invoke({}, { key: 'k' })).outcome;",
      ].join('\n'),
    });
    dirs.push(dir);
    const { status, output } = typecheck(dir);
    expect(status).not.toBe(0);
    expect(output).toMatch(/error TS1309: The current file is a CommonJS module and cannot use 'await'/);
    expect(output).toContain(`Type '"polled"' is not assignable to type '"executed" | "replayed"'`);
  });
});
