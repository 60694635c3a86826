import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';

/**
 * The two word lists the free-text policy reads: person names (`@cspell/dict-people-names`, ~39,000 given and
 * family names, maintained with cspell) and English words (`word-list`, ~274,000 lowercase words). Both are read
 * once per process, when the first redactor is made, never on a call.
 */
export interface Dictionaries {
  /** True when the lowercase word is a known person name. */
  isName(lower: string): boolean;
  /** True when the lowercase word is an English dictionary word. */
  isWord(lower: string): boolean;
}

const require = createRequire(import.meta.url);

/**
 * A sorted newline-separated file searched in place: building a Set of 274,000 words costs most of a second at
 * start-up, a binary search over the file's text costs nothing up front and ~18 comparisons per lookup.
 */
function sortedLines(text: string): (word: string) => boolean {
  const lineAt = (offset: number): [start: number, end: number] => {
    const start = text.lastIndexOf('\n', offset - 1) + 1;
    const newline = text.indexOf('\n', offset);
    return [start, newline === -1 ? text.length : newline];
  };
  return (word) => {
    if (word.length === 0 || word.includes('\n')) return false;
    let low = 0;
    let high = text.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      const [start, end] = lineAt(mid);
      const line = text.slice(start, end);
      if (line === word) return true;
      if (line < word) low = end + 1;
      else high = start;
    }
    return false;
  };
}

function loadNames(): Set<string> {
  const manifest = require.resolve('@cspell/dict-people-names/cspell-ext.json');
  const text = readFileSync(path.join(path.dirname(manifest), 'dict/people-names.txt'), 'utf8');
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    // Abbreviations such as "Co." or "Corp." and possessives are in the list for spell-checking, not as names.
    if (line.length < 2 || line.startsWith('#') || /[.'’]/.test(line)) continue;
    names.add(line.toLowerCase());
  }
  return names;
}

let loaded: Dictionaries | undefined;

/** The process's dictionaries, loaded on first use. */
export function dictionaries(): Dictionaries {
  if (loaded !== undefined) return loaded;
  const names = loadNames();
  // word-list's entry point only computes the file's path; resolving it directly keeps this synchronous.
  const words = sortedLines(
    readFileSync(path.join(path.dirname(require.resolve('word-list')), 'words.txt'), 'utf8'),
  );
  loaded = { isName: (lower) => names.has(lower), isWord: words };
  return loaded;
}

/** Whether this process has loaded them yet (the redactor loads them at its first judged word). */
export function dictionariesLoaded(): boolean {
  return loaded !== undefined;
}
