import { keyProblem } from '../contract/keys.js';
import { boundedCache } from './bounded-cache.js';
import { dictionaries } from './redact/dictionaries.js';
import { DEFAULT_ALLOWED_WORDS } from './redact/words.js';

/**
 * Which keys may appear raw in telemetry (docs/telemetry.md, "Keys"). Everything else is emitted as its HMAC.
 *
 * 1. Formats known to hold no personal data: `deriveKey` output (`tlk1_` + 43 base64url), UUIDs, ULIDs.
 * 2. Opaque random tokens: 16-128 characters of `[A-Za-z0-9_-]`, letters and digits mixed, at least 3.5 bits of
 *    Shannon entropy per character, and no run of four or more letters that is an English word or a name.
 * 3. The conservative check: at most 128 characters of `[A-Za-z0-9._-]` (no `:`), no secret-like run; every alphabetic part of four or more
 *    letters is an English word (or on the allow-list) and no part at all is in the names dictionary; and the
 *    redactor leaves the key unchanged (no detector matches), and no three digit groups in a row (a date or a
 *    phone number).
 */
const DERIVED = /^tlk1_[A-Za-z0-9_-]{43}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i;
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;
// No ':' or '=': a label and a value (`refund:…`) says the value came from somewhere, so it is hashed.
const CONSERVATIVE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const ALNUM_RUN = /[A-Za-z0-9]{6,}/g;
const HEX_RUN = /[0-9a-f]{16,}/;
const ALLOWED = new Set(DEFAULT_ALLOWED_WORDS);

/** The cheap checks the ledger applies to a key, run before any scrubbing: a key failing them is never scrubbed. */
export function isAcceptableKey(key: string): boolean {
  return keyProblem(key) === undefined;
}

/** Character counts of `entropyPerChar`, left all zero between calls. */
const COUNTS = new Uint8Array(128);

/** Shannon entropy of an ASCII `text` (TOKEN has passed) of at most 128 characters. */
function entropyPerChar(text: string): number {
  // Runs on every new key: a table by character code rather than a Map, summed in first-seen order as a Map is.
  const seen: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i) & 127;
    if (COUNTS[code] === 0) seen.push(code);
    COUNTS[code] = (COUNTS[code] ?? 0) + 1;
  }
  let bits = 0;
  for (const code of seen) {
    const p = (COUNTS[code] ?? 0) / text.length;
    bits -= p * Math.log2(p);
    COUNTS[code] = 0;
  }
  return bits;
}

/**
 * Secret-like runs: upper, lower and digits mixed in one run of 6+ letters and digits (Tr0ub4dor), or 16+ hex
 * digits (an API key). One pass over the runs rather than one lookahead pattern tried at every position.
 */
function hasSecretLikeRun(key: string): boolean {
  for (const run of key.match(ALNUM_RUN) ?? []) {
    if (/[a-z]/.test(run) && /[A-Z]/.test(run) && /\d/.test(run)) return true;
  }
  return HEX_RUN.test(key);
}

/** Alphabetic parts, split at digits, separators and camel-case humps: `refundPriya2` → refund, Priya. */
function letterParts(key: string): string[] {
  return key.match(/[A-Z]?[a-z]+|[A-Z]+(?![a-z])/g) ?? [];
}

/** A lowercase letter part is an English word (`WORD`) and/or a name (`NAME`). */
const WORD = 1;
const NAME = 2;
const MAX_REMEMBERED_PARTS = 10_000;

/**
 * The dictionary verdict of a lowercase part, remembered: keys repeat their parts (`order`, `refund`, `tl`) on
 * every call, and an English-word lookup is a binary search over the word list's text (about a microsecond).
 */
const rememberedPartKind = boundedCache((lower: string): number => {
  const dicts = dictionaries();
  return (dicts.isWord(lower) ? WORD : 0) | (dicts.isName(lower) ? NAME : 0);
}, MAX_REMEMBERED_PARTS);
// The computation always answers (0 for neither), so `?? 0` never decides anything; it only narrows the type.
const partKind = (lower: string): number => rememberedPartKind(lower) ?? 0;

function isOpaqueToken(key: string): boolean {
  if (!TOKEN.test(key) || !/\d/.test(key) || !/[A-Za-z]/.test(key)) return false;
  if (entropyPerChar(key) < 3.5) return false;
  return letterParts(key).every((part) => part.length < 4 || partKind(part.toLowerCase()) === 0);
}

// Three digit groups in a row (1984-07-19, 020.7946.0958) read as a date or a phone number.
const DIGIT_GROUPS = /\d{1,4}[-.:_]\d{1,4}[-.:_]\d{2,4}/;

function passesConservativeCheck(key: string, scrub: (text: string) => string): boolean {
  if (!CONSERVATIVE.test(key) || DIGIT_GROUPS.test(key) || hasSecretLikeRun(key)) return false;
  for (const part of letterParts(key)) {
    const lower = part.toLowerCase();
    if (ALLOWED.has(lower)) continue;
    const kind = partKind(lower);
    if ((kind & NAME) !== 0) return false;
    if (lower.length >= 4 && (kind & WORD) === 0) return false;
  }
  return scrub(key) === key;
}

/** True when `key` (already acceptable) may be emitted raw. */
export function isRawSafeKey(key: string, scrub: (text: string) => string): boolean {
  return (
    DERIVED.test(key) ||
    UUID.test(key) ||
    ULID.test(key) ||
    isOpaqueToken(key) ||
    passesConservativeCheck(key, scrub)
  );
}
