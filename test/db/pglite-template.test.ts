import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, describe, expect, it } from 'vitest';
import { createInMemoryPGlite } from '../../src/ledger/drivers/pglite-template.js';

const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-template-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('in-memory PGlite from a saved initdb', () => {
  it('falls back to initdb when the saved cluster is unreadable, saves a good one, and starts from it next time', async () => {
    const path = join(dir, 'initdb.tar.gz');
    writeFileSync(path, 'not a tarball');
    const first = await createInMemoryPGlite<PGlite>(PGlite, path);
    expect((await first.query<{ n: number }>('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    await first.close();
    const saved = readFileSync(path);
    // gzip magic bytes: the corrupt file was replaced by a real dump.
    expect([saved[0], saved[1]]).toEqual([0x1f, 0x8b]);

    const second = await createInMemoryPGlite<PGlite>(PGlite, path);
    await second.query('CREATE TABLE t (x int)');
    await second.query('INSERT INTO t VALUES (42)');
    expect((await second.query<{ x: number }>('SELECT x FROM t')).rows).toEqual([{ x: 42 }]);
    await second.close();
    // Loading never writes back: the template stays the pristine initdb.
    expect(readFileSync(path).equals(saved)).toBe(true);
  });
});
