/** One entry of a ustar archive; `data` is a view into the archive, not a copy. */
export interface TarEntry {
  readonly path: string;
  readonly kind: 'file' | 'directory';
  readonly data: Uint8Array;
}

/** An entry's header and data blocks as they stand in the archive, and what they hold (undefined for the root). */
interface TarRecord {
  readonly blocks: Uint8Array;
  readonly entry: TarEntry | undefined;
}

const BLOCK = 512;
const decoder = new TextDecoder();

function text(block: Uint8Array, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length);
  const end = field.indexOf(0);
  return decoder.decode(end === -1 ? field : field.subarray(0, end));
}

/**
 * Reads the regular files and directories of a ustar archive (what PGlite's `dumpDataDir` writes), paths relative
 * to its root. Views instead of copies: a data directory loaded from it holds the archive once, not three times.
 * Throws on anything it does not understand, so the caller falls back to PGlite's own loader.
 */
export function readTar(archive: Uint8Array): TarEntry[] {
  return tarRecords(archive).flatMap(({ entry }) => (entry ? [entry] : []));
}

/**
 * The archive without the entries `keep` refuses: every other record's blocks as they were (the root's included),
 * then the end-of-archive blocks. Throws as `readTar` does.
 */
export function keepEntries(archive: Uint8Array, keep: (entry: TarEntry) => boolean): Uint8Array {
  const kept = tarRecords(archive).filter(({ entry }) => entry === undefined || keep(entry));
  const out = new Uint8Array(kept.reduce((size, { blocks }) => size + blocks.length, 2 * BLOCK));
  let at = 0;
  for (const { blocks } of kept) {
    out.set(blocks, at);
    at += blocks.length;
  }
  return out;
}

function tarRecords(archive: Uint8Array): TarRecord[] {
  const records: TarRecord[] = [];
  let offset = 0;
  while (offset + BLOCK <= archive.length) {
    const header = archive.subarray(offset, offset + BLOCK);
    if (header.every((byte) => byte === 0)) return records;
    if (!text(header, 257, 6).startsWith('ustar')) throw new Error(`not a ustar header at byte ${offset}`);
    const size = Number.parseInt(text(header, 124, 12).trim() || '0', 8);
    if (!Number.isSafeInteger(size) || size < 0) throw new Error(`bad entry size at byte ${offset}`);
    const prefix = text(header, 345, 155);
    const path = (prefix ? `${prefix}/${text(header, 0, 100)}` : text(header, 0, 100)).replace(
      /^(\.?\/)+|\/+$/g,
      '',
    );
    const type = text(header, 156, 1);
    const start = offset + BLOCK;
    if (start + size > archive.length) throw new Error(`entry ${path} runs past the end of the archive`);
    if (path.split('/').includes('..')) throw new Error(`entry ${path} leaves the archive's root`);
    const end = start + Math.ceil(size / BLOCK) * BLOCK;
    const blocks = archive.subarray(offset, end);
    if (path === '') {
      // The archive's root itself ("./"): nothing to make.
      records.push({ blocks, entry: undefined });
    } else if (type === '' || type === '0')
      records.push({ blocks, entry: { path, kind: 'file', data: archive.subarray(start, start + size) } });
    else if (type === '5')
      records.push({ blocks, entry: { path, kind: 'directory', data: archive.subarray(start, start) } });
    else throw new Error(`entry ${path} has type ${type}, neither a file nor a directory`);
    offset = end;
  }
  throw new Error('archive ends without its end-of-archive blocks');
}
