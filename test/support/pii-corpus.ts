import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

export interface PiiCorpus {
  readonly values: readonly { readonly category: string; readonly value: string }[];
  readonly structured_examples: readonly Record<string, unknown>[];
  readonly free_text_examples: readonly string[];
}

const repoRoot = path.resolve(import.meta.dirname, '../..');

/** The personal-data corpus written for this repository: every test that needs one uses it. */
export const corpus = JSON.parse(
  readFileSync(path.join(repoRoot, 'test/corpus/personal-data.json'), 'utf8'),
) as PiiCorpus;

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
  console.info(`[pii-corpus] ${SHARED_CORPUS_PATH} is absent: the shared-corpus suites are skipped`);
}

/** Stands in for the shared corpus while a skipped suite is collected. */
export const EMPTY_CORPUS: PiiCorpus = {
  values: [{ category: 'none', value: 'none' }],
  structured_examples: [{}],
  free_text_examples: [],
};
