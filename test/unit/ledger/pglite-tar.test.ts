import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keepEntries, readTar, type TarEntry } from '../../../src/ledger/drivers/pglite-tar.js';
import { isSegmentAhead } from '../../../src/ledger/drivers/pglite-template.js';

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

describe('keepEntries', () => {
  it('leaves out the refused entries and keeps every other record as it was, root included', () => {
    const tar = archive();
    const lean = keepEntries(tar, (entry) => entry.path !== 'base/1/1255');
    // Each kept record (the root's header, five entries) with its data in whole blocks, then two end blocks; the
    // system's tar had padded its archive to 10 kB records.
    const blocks = (bytes: number) => Math.ceil(bytes / 512) * 512;
    expect(lean.length).toBe(512 + 5 * 512 + blocks(3) + 2 * 512);
    expect(lean.subarray(-1024).every((b) => b === 0)).toBe(true);
    const paths = readTar(lean).map((e) => e.path);
    expect(paths.sort()).toEqual(['PG_VERSION', 'base', 'base/1', 'base/1/empty', 'pg_notify']);
    // The system's tar reads it, root entry and all.
    const listed = execFileSync('tar', ['-tf', '-'], { input: lean }).toString().split('\n').filter(Boolean);
    expect(listed).toContain('./');
    expect(listed).not.toContain('./base/1/1255');
    expect(new TextDecoder().decode(readTar(lean).find((e) => e.path === 'PG_VERSION')?.data)).toBe('18\n');
  });

  it('refuses an archive it does not understand, as readTar does', () => {
    expect(() =>
      keepEntries(new TextEncoder().encode('not a tarball'.padEnd(1024, ' ')), () => true),
    ).toThrow(/ustar/);
  });
});

describe('isSegmentAhead', () => {
  const MiB = 1024 * 1024;
  /** A 1 MB segment named `name` whose first page header carries `address`. */
  const segment = (name: string, address: bigint | undefined, size = MiB): TarEntry => {
    const data = new Uint8Array(size);
    if (address !== undefined) new DataView(data.buffer).setBigUint64(8, address, true);
    return { path: `pg_wal/${name}`, kind: 'file', data };
  };

  it('keeps a segment whose first page carries its own address, and drops one recycled or made ahead', () => {
    expect(isSegmentAhead(segment('000000010000000000000008', 8n * BigInt(MiB)))).toBe(false);
    // Segment 0x1001 of 1 MB segments is in the second 4 GB "log": its address is 4,097 MB.
    expect(isSegmentAhead(segment('000000010000000100000001', 4097n * BigInt(MiB)))).toBe(false);
    // Recycled: renamed to 0x0E, still holding segment 0x03's pages.
    expect(isSegmentAhead(segment('00000001000000000000000E', 3n * BigInt(MiB)))).toBe(true);
    // Made ahead, zero-filled.
    expect(isSegmentAhead(segment('00000001000000000000000E', undefined))).toBe(true);
  });

  it('keeps whatever it cannot judge', () => {
    expect(isSegmentAhead({ path: 'base/5/1255', kind: 'file', data: new Uint8Array(8192) })).toBe(false);
    expect(
      isSegmentAhead({ path: 'pg_wal/archive_status', kind: 'directory', data: new Uint8Array(0) }),
    ).toBe(false);
    expect(isSegmentAhead(segment('00000001000000000000000E', undefined, 8))).toBe(false);
    expect(isSegmentAhead(segment('00000001000000000000000E', undefined, 3 * MiB))).toBe(false);
  });
});
