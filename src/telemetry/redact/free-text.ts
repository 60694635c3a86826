import { setNamePartCheck } from './contextual-detectors.js';
import { type Finding, LABEL } from './detector.js';
import { DETECTORS } from './detectors.js';
import { dictionaries } from './dictionaries.js';
import { detectionView } from './normalize.js';
import { DEFAULT_ALLOWED_WORDS, judgeWord, type WordVerdict } from './words.js';

/** What ends a text cut at the scrubbing cap. */
export const TRUNCATION_MARK = '…[truncated]';

/**
 * Longest text scrubbed, in UTF-16 code units: the rest is cut before scrubbing and the result ends with
 * `…[truncated]`. Scrubbing is linear in its input; the cap bounds its cost per value to a few milliseconds.
 */
export const DEFAULT_MAX_TEXT_LENGTH = 4096;

export interface FreeTextOptions {
  /** Extra patterns whose matches are kept as they are (checked after the certain detectors). */
  readonly preserve?: readonly RegExp[];
  /** Words never removed by the name policy, compared lower-cased. */
  readonly allowWords?: readonly string[];
  readonly maxTextLength?: number;
}

// Whole words only: letters inside an opaque token (NV2Hib) are not a word.
const WORD = /(?<![\p{L}\p{N}\p{M}])[\p{L}\p{M}]+(?:['’][\p{L}\p{M}]+)*(?![\p{L}\p{N}\p{M}])/gu;
const LETTER_RUN = /[\p{L}\p{M}]+/gu;
const NON_LATIN = /[^\p{Script=Latin}\p{M}]/u;
// Characters after which a word starts a sentence (or a field, a quote, a list item).
const SENTENCE_OPENERS = new Set([
  '.',
  '!',
  '?',
  ':',
  ';',
  '\n',
  '"',
  "'",
  '(',
  '[',
  '{',
  '“',
  '‘',
  '«',
  '>',
  '|',
  '•',
  '—',
  '=',
]);

function previousNonSpace(text: string, index: number): string | undefined {
  for (let i = index - 1; i >= 0 && i >= index - 64; i--) {
    const char = text[i]!;
    if (char !== ' ' && char !== '\t') return char;
  }
  return undefined;
}

/** Cuts at `max` without splitting a surrogate pair. */
export function truncate(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  let end = Math.max(0, max);
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return { text: text.slice(0, end), truncated: true };
}

type Judge = (word: string, sentenceStart: boolean) => WordVerdict;

/**
 * Verdicts of recent words remembered: prose repeats its words, and a lookup is two dictionary searches. The
 * dictionaries load at the first word judged, not when the redactor is made: a ledger whose calls no SDK observes
 * never scrubs, and so never holds them (about 5 MiB resident, and their reading at start).
 */
function cachedJudge(allowed: ReadonlySet<string>): Judge {
  const cache = new Map<string, WordVerdict>();
  return (word, sentenceStart) => {
    const key = sentenceStart ? `^${word}` : word;
    let verdict = cache.get(key);
    if (verdict === undefined) {
      verdict = judgeWord(word, sentenceStart, dictionaries(), allowed);
      if (cache.size >= 10_000) cache.clear();
      cache.set(key, verdict);
    }
    return verdict;
  };
}

function nameParts(judge: Judge): (text: string) => boolean {
  // Only capitalised whole parts between separators (`refund_for_Priya_1`); lower-case parts (arn, cus) and
  // upper-case codes (ORD, INV) are how identifiers are spelled.
  return (text) =>
    text.split(/[_\-.:]/).some((part) => /^[A-Z][a-z]+$/.test(part) && judge(part, false) === 'remove');
}

/**
 * Free-text scrubbing in one pass per rule over a bounded text: certain detectors (secrets, emails, cards,
 * IBANs, IPs, national ids), then identifiers claimed as kept, then contextual rules (dates of birth, phones,
 * addresses, postcodes) and last the word policy for names. Every rule sees a detection copy with fullwidth forms
 * and non-ASCII digits mapped, and each span of text is decided once.
 */
export function createFreeTextRedactor(options: FreeTextOptions = {}): (text: string) => string {
  const allowed = new Set(
    [...DEFAULT_ALLOWED_WORDS, ...(options.allowWords ?? [])].map((w) => w.toLowerCase()),
  );
  const judge = cachedJudge(allowed);
  const hasNamePart = nameParts(judge);
  setNamePartCheck(hasNamePart);
  const preserve = (options.preserve ?? []).map(
    (p) => new RegExp(p.source, p.flags.includes('g') ? p.flags : `${p.flags}g`),
  );
  const maxTextLength = options.maxTextLength ?? DEFAULT_MAX_TEXT_LENGTH;
  const certainCount = DETECTORS.findIndex((d) => d.name === 'timestamp');

  return (input: string): string => {
    if (input.length === 0) return input;
    const cut = truncate(input, maxTextLength);
    const text = cut.text;
    const { text: view, origin } = detectionView(text);
    const claimed = new Uint8Array(text.length);
    const findings: Finding[] = [];
    const claim = (finding: Finding): void => {
      for (let i = finding.start; i < finding.end; i++) if (claimed[i]) return;
      claimed.fill(1, finding.start, finding.end);
      findings.push(finding);
    };
    const run = (pattern: RegExp, judge: (m: RegExpExecArray) => readonly Finding[]) => {
      pattern.lastIndex = 0;
      for (let m = pattern.exec(view); m !== null; m = pattern.exec(view)) {
        if (m[0].length === 0) {
          pattern.lastIndex++;
          continue;
        }
        for (const finding of judge(m)) {
          // Offsets in the copy are offsets in the text unless the copy collapsed digits outside the BMP.
          claim(
            origin === undefined
              ? finding
              : {
                  start: origin[finding.start] ?? finding.start,
                  end: origin[finding.end] ?? finding.end,
                  label: finding.label,
                },
          );
        }
      }
    };
    DETECTORS.forEach((detector, index) => {
      if (index === certainCount) {
        for (const pattern of preserve)
          run(pattern, (m) => [{ start: m.index, end: m.index + m[0].length, label: 'keep' }]);
      }
      run(detector.pattern, (m) => detector.judge(m));
    });
    wordFindings(text, claimed, judge, claim);

    findings.sort((a, b) => a.start - b.start);
    let out = '';
    let at = 0;
    for (const finding of findings) {
      if (finding.label === 'keep') continue;
      out += text.slice(at, finding.start) + finding.label;
      at = finding.end;
    }
    out += text.slice(at);
    return cut.truncated ? out + TRUNCATION_MARK : out;
  };
}

function wordFindings(
  text: string,
  claimed: Uint8Array,
  judge: Judge,
  claim: (finding: Finding) => void,
): void {
  // Letters of another script go wherever they stand, even glued to digits (李雷123).
  LETTER_RUN.lastIndex = 0;
  for (let m = LETTER_RUN.exec(text); m !== null; m = LETTER_RUN.exec(text)) {
    if (NON_LATIN.test(m[0])) claim({ start: m.index, end: m.index + m[0].length, label: LABEL.NAME });
  }
  const words: { start: number; end: number; verdict: WordVerdict }[] = [];
  WORD.lastIndex = 0;
  for (let m = WORD.exec(text); m !== null; m = WORD.exec(text)) {
    const start = m.index;
    const end = start + m[0].length;
    if (claimed[start] || claimed[end - 1]) continue;
    const before = previousNonSpace(text, start);
    const sentenceStart = before === undefined || SENTENCE_OPENERS.has(before);
    words.push({ start, end, verdict: judge(m[0], sentenceStart) });
  }
  // A name that is also a word (Will, Grant, JOHN) goes when a neighbour is a name too: "John Smith".
  const adjacent = (a: { end: number }, b: { start: number }) =>
    /^[ \t]{1,2}$|^[ \t]?[-‐][ \t]?$/.test(text.slice(a.end, b.start));
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word.verdict !== 'maybe') continue;
    const left = words[i - 1];
    const right = words[i + 1];
    const near = (other: typeof word | undefined, first: typeof word, second: typeof word) =>
      other !== undefined && other.verdict !== 'keep' && adjacent(first, second);
    if ((left && near(left, left, word)) || (right && near(right, word, right))) word.verdict = 'remove';
  }
  for (const word of words) {
    if (word.verdict === 'remove') claim({ start: word.start, end: word.end, label: LABEL.NAME });
  }
}
