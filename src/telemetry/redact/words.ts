import type { Dictionaries } from './dictionaries.js';

/**
 * The name policy for free text, word by word (see docs/telemetry.md, "What the scrubber removes"):
 * - any word in a script other than Latin is removed: no dictionary covers names in every script, and telling a
 *   Cyrillic surname from a Cyrillic word needs more than a pattern;
 * - a capitalised word that is not an English word is removed (Okafor, Priya), unless it is on the allow-list;
 * - a known name is removed when it is capitalised mid-sentence, in upper case next to another name, or lower
 *   case and not an English word; a name that is also a word (Will, Grant) is kept at a sentence start unless a
 *   neighbouring word is removed as a name;
 * - lower-case and upper-case words that are not names are kept (error codes, SQL, identifiers).
 */
export type WordVerdict = 'keep' | 'remove' | 'maybe';

/** Proper nouns common in error messages and stack traces that the English list does not hold. */
export const DEFAULT_ALLOWED_WORDS: readonly string[] = [
  'postgres',
  'postgresql',
  'pglite',
  'redis',
  'kafka',
  'mysql',
  'sqlite',
  'mongodb',
  'linux',
  'darwin',
  'windows',
  'docker',
  'kubernetes',
  'grafana',
  'prometheus',
  'loki',
  'jaeger',
  'opentelemetry',
  'otel',
  'openai',
  'anthropic',
  'vercel',
  'zod',
  'valibot',
  'vitest',
  'javascript',
  'typescript',
  'json',
  'yaml',
  'html',
  'http',
  'https',
  'grpc',
  'protobuf',
  'uuid',
  'ulid',
  'ksuid',
  'api',
  'url',
  'uri',
  'sql',
  'utf',
  'ascii',
  'async',
  'await',
  'eof',
  'nan',
  'ok',
  'github',
  'gitlab',
  'stripe',
  'paypal',
  'twilio',
  'sendgrid',
  'slack',
  'aws',
  'gcp',
  'azure',
  'cloudflare',
  'undici',
  'axios',
  'fetch',
  'nodejs',
  'node',
  'npm',
  'mcp',
  'jsonrpc',
  'uncaught',
  'unhandled',
  'errno',
  'syscall',
  'econnrefused',
  'etimedout',
  'enotfound',
  'econnreset',
  'sigterm',
  'arn',
  'sigint',
  // Calendar words in dates (RFC 2822 and log timestamps). April, May and June are given names too; they stay
  // under the name rules.
  'mon',
  'tue',
  'wed',
  'thu',
  'fri',
  'sat',
  'sun',
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
  'sunday',
  'jan',
  'feb',
  'mar',
  'apr',
  'jun',
  'jul',
  'aug',
  'sep',
  'sept',
  'oct',
  'nov',
  'dec',
  'january',
  'february',
  'march',
  'july',
  'september',
  'october',
  'november',
  'december',
];

type Shape = 'lower' | 'title' | 'caps' | 'mixed';

function shapeOf(word: string): Shape {
  const lower = word.toLowerCase();
  if (word === lower) return 'lower';
  if (word === word.toUpperCase()) return 'caps';
  const first = word.slice(0, 1);
  const rest = word.slice(1);
  if (first === first.toUpperCase() && rest === rest.toLowerCase()) return 'title';
  return 'mixed';
}

const NON_LATIN_LETTER = /[^\p{Script=Latin}\p{M}'’]/u;

/** The verdict on one word, before its neighbours are considered. */
export function judgeWord(
  word: string,
  sentenceStart: boolean,
  dictionaries: Dictionaries,
  allowed: ReadonlySet<string>,
): WordVerdict {
  if (NON_LATIN_LETTER.test(word)) return 'remove';
  const stripped = word.replace(/['’][sS]$/, '');
  const parts = stripped.split(/['’]/).filter((part) => part.length >= 2);
  if (parts.length > 1 || (parts.length === 1 && parts[0] !== stripped)) {
    // O'Brien, D’Angelo: the strictest verdict of the parts.
    const verdicts = parts.map((part) => judgeWord(part, sentenceStart, dictionaries, allowed));
    return verdicts.includes('remove') ? 'remove' : verdicts.includes('maybe') ? 'maybe' : 'keep';
  }
  const bare = stripped.toLowerCase();
  if (bare.length < 2 || allowed.has(bare)) return 'keep';
  const name = dictionaries.isName(bare);
  const isWord = dictionaries.isWord(bare);
  switch (shapeOf(stripped)) {
    case 'lower':
      return name && !isWord ? 'remove' : 'keep';
    case 'title':
      if (!isWord) return 'remove';
      if (!name) return 'keep';
      return sentenceStart ? 'maybe' : 'remove';
    case 'caps':
      // Short upper-case words are codes (NI, US, EUR, SQL), not names.
      if (bare.length <= 3) return 'keep';
      if (name && !isWord) return 'remove';
      return name ? 'maybe' : 'keep';
    case 'mixed':
      // McDonald, DeShawn are names; TypeError and processTicksAndRejections are code.
      return name && !isWord ? 'remove' : 'keep';
  }
}
