import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readTar } from '../../../src/ledger/drivers/pglite-tar.js';

const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-tar-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A ustar archive written by the system's tar, as a PGlite data directory would be laid out. */
function archive(): Uint8Array {
  const root = mkdtempSync(join(dir, 'pgdata-'));
  mkdirSync(join(root, 'base', '1'), { recursive: true });
  mkdirSync(join(root, 'pg_notify'));
  writeFileSync(join(root, 'PG_VERSION'), '18\n');
  writeFileSync(join(root, 'base', '1', '1255'), Buffer.alloc(8192 * 3 + 17, 7));
  writeFileSync(join(root, 'base', '1', 'empty'), '');
  return new Uint8Array(execFileSync('tar', ['--format=ustar', '-cf', '-', '-C', root, '.']));
}

describe('readTar', () => {
  it('lists files and directories relative to the root, each file a view into the archive', () => {
    const tar = archive();
    const entries = readTar(tar);
    const byPath = new Map(entries.map((e) => [e.path, e]));
    expect([...byPath.keys()].sort()).toEqual([
      'PG_VERSION',
      'base',
      'base/1',
      'base/1/1255',
      'base/1/empty',
      'pg_notify',
    ]);
    expect(byPath.get('base/1')?.kind).toBe('directory');
    expect(new TextDecoder().decode(byPath.get('PG_VERSION')?.data)).toBe('18\n');
    const big = byPath.get('base/1/1255');
    expect(big?.data.length).toBe(8192 * 3 + 17);
    expect(big?.data.every((b) => b === 7)).toBe(true);
    expect(big?.data.buffer).toBe(tar.buffer);
    expect(byPath.get('base/1/empty')?.data.length).toBe(0);
  });

  it('refuses what it does not understand instead of loading half a cluster', () => {
    const tar = archive();
    expect(() => readTar(tar.subarray(0, tar.length - 1024 * 10))).toThrow();
    expect(() => readTar(new TextEncoder().encode('not a tarball'.padEnd(1024, ' ')))).toThrow(/ustar/);
    const escaping = tar.slice();
    escaping.set(new TextEncoder().encode('../x\0'), 0);
    expect(() => readTar(escaping)).toThrow(/root/);
  });
});
