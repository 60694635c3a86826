import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const fixtures = join(import.meta.dirname, 'fixtures');

function line(output: string, tag: string): unknown {
  const found = output.split('\n').find((l) => l.startsWith(`${tag} `));
  if (!found) throw new Error(`no ${tag} line in:\n${output}`);
  return JSON.parse(found.slice(tag.length + 1));
}

/** The files `npm publish` would put in the tarball. */
function packedFiles(): string[] {
  const output = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: root,
    encoding: 'utf8',
  });
  const [pack] = JSON.parse(output) as { files: { path: string }[] }[];
  return pack!.files.map((file) => file.path);
}

describe('the npm tarball', () => {
  let files: string[];
  let consumer: string;

  beforeAll(() => {
    if (!existsSync(join(root, 'dist/index.js'))) execFileSync('npm', ['run', 'build'], { cwd: root });
    files = packedFiles();
    // A project outside the package that has it installed (a link, as `npm link` makes).
    consumer = mkdtempSync(join(tmpdir(), 'tool-ledger-consumer-'));
    mkdirSync(join(consumer, 'node_modules'));
    symlinkSync(root, join(consumer, 'node_modules/tool-ledger'), 'dir');
  });

  afterAll(() => {
    if (consumer) rmSync(consumer, { recursive: true, force: true });
  });

  it('carries the Apache-2.0 license that package.json names', () => {
    expect(files).toContain('LICENSE');
    expect(readFileSync(join(root, 'LICENSE'), 'utf8')).toContain(
      'Apache License\n                           Version 2.0',
    );
  });

  it('ships no source map, since the sources they would point at are not shipped', () => {
    expect(files.filter((file) => file.endsWith('.map'))).toEqual([]);
    expect(files.some((file) => file.startsWith('src/'))).toBe(false);
  });

  it('has no markdown link to a file that is not in the tarball', () => {
    const broken: string[] = [];
    for (const file of files.filter((f) => f.endsWith('.md'))) {
      const text = readFileSync(join(root, file), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!) || target!.startsWith('#')) continue;
        const path = normalize(join(dirname(file), target!.split('#')[0]!));
        if (!files.includes(path)) broken.push(`${file} -> ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('loads every entry of the exports map with require, giving the same exports as import', () => {
    const output = execFileSync(process.execPath, [join(fixtures, 'require-all.cjs')], {
      cwd: consumer,
      encoding: 'utf8',
      env: { ...process.env, NODE_PATH: join(consumer, 'node_modules') },
    });
    const report = line(output, 'RESULT') as Record<string, { required: string[]; imported: string[] }>;
    const { exports } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      exports: Record<string, unknown>;
    };
    expect(Object.keys(report)).toHaveLength(Object.keys(exports).length - 1);
    for (const [id, { required, imported }] of Object.entries(report)) {
      expect(required.length, id).toBeGreaterThan(0);
      expect(required, id).toEqual(imported);
    }
  });
});
