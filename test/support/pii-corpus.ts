import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

export interface PiiCorpus {
  /**
   * Categories recognisable only next to their label (a password, a bare five-digit ZIP): they are tested in
   * labelled text and in structured fields, never bare. Category → the label written before the value.
   */
  readonly labelled_categories?: Readonly<Record<string, string>>;
  readonly values: readonly { readonly category: string; readonly value: string }[];
  readonly structured_examples: readonly Record<string, unknown>[];
  readonly free_text_examples: readonly string[];
}

const repoRoot = path.resolve(import.meta.dirname, '../..');

/** The personal-data corpus written for this repository: every test that needs one uses it. */
export const corpus = JSON.parse(
  readFileSync(path.join(repoRoot, 'test/corpus/personal-data.json'), 'utf8'),
) as PiiCorpus;

export interface IdentifierCorpus {
  readonly identifiers: readonly { readonly format: string; readonly value: string }[];
}

/** Identifier formats scrubbing must leave untouched. */
export const identifiers = (
  JSON.parse(readFileSync(path.join(repoRoot, 'test/corpus/identifiers.json'), 'utf8')) as IdentifierCorpus
).identifiers;

/** Labels of the in-repo corpus, also applied to the shared one (its passwords and ZIPs are the same kinds). */
const LABELS = corpus.labelled_categories ?? {};

/** The label a labelled-only category is written after (`password`, `zip`), or undefined for the rest. */
export function labelOf(category: string): string | undefined {
  return LABELS[category];
}

/** The texts one corpus value is tested in: bare and in sentences, or only after its label. */
export function contextsOf(category: string, value: string): string[] {
  const label = LABELS[category];
  if (label !== undefined)
    return [`${label} ${value}`, `${label}: ${value}`, `Refund failed (${label}=${value}); retry later`];
  return [
    value,
    `${category.replace(/_/g, ' ')} ${value}`,
    `Refund failed (${value}); retry later`,
    `Sent to ${value}, then gave up.`,
  ];
}

/** Corpus values found in `text`, compared case-insensitively. */
export function leakedValues(text: string, values: PiiCorpus['values']): string[] {
  const lower = text.toLowerCase();
  return values.filter(({ value }) => lower.includes(value.toLowerCase())).map(({ value }) => value);
}

/**
 * The team's shared corpus, when a `shared/` checkout sits beside this repository (it never does in a plain
 * clone). Read at test time, never copied in. Suites that use it run under `describe.skipIf(!sharedCorpus)` with
 * a name that says so, and print the note below when skipped.
 */
export const SHARED_CORPUS_PATH = path.resolve(repoRoot, '../shared/pii-corpus/corpus.json');
export const sharedCorpus: PiiCorpus | undefined = existsSync(SHARED_CORPUS_PATH)
  ? (JSON.parse(readFileSync(SHARED_CORPUS_PATH, 'utf8')) as PiiCorpus)
  : undefined;

export const SHARED_CORPUS_SUITE = `shared corpus (${SHARED_CORPUS_PATH}; skipped when absent)`;

if (sharedCorpus === undefined) {
  // One line on stderr, like test/support/requires.ts's skips (console.info would come wrapped in vitest's header).
  process.stderr.write(
    `SKIPPED the shared-corpus suites: ${SHARED_CORPUS_PATH} is absent (a team checkout only).\n`,
  );
}

/** Stands in for the shared corpus while a skipped suite is collected. */
export const EMPTY_CORPUS: PiiCorpus = {
  values: [{ category: 'none', value: 'none' }],
  structured_examples: [{}],
  free_text_examples: [],
};
