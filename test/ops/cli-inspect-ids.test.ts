import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLedger, type Ledger } from '../../src/index.js';
import { databaseUrl, TEST_DISTRIBUTION, uniqueSchema } from '../support/db.js';
import { corpus, identifiers } from '../support/pii-corpus.js';
import { CLI_BIN, ensureBuiltCli } from './support/cli-build.js';

/**
 * Issue 11: support staff read the invoice id they look for. The real built binary inspects runs whose results
 * hold every identifier of test/corpus/identifiers.json, as structured values and inside free text, beside
 * personal data that must not be shown.
 */

const schema = uniqueSchema('ops_cli_ids');
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
let ledger: Ledger;

const chunk = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, i * size + size));

// Runs of 60 identifiers keep each result under the scrubber's 16,384-character budget per value (docs/telemetry.md).
const runs = chunk(
  identifiers.map(({ value }) => value),
  60,
);
// Values only recognisable next to a label are tested labelled elsewhere; a sample of every other category here.
const piiValues = corpus.values
  .filter(({ category }) => corpus.labelled_categories?.[category] === undefined)
  .filter((_, index) => index % 7 === 0)
  .map(({ value }) => value);

function inspect(run: number, json: boolean): string {
  const args = [
    'inspect',
    '--schema',
    schema,
    '--tenant',
    'acme',
    '--tool',
    'export_ids',
    '--key',
    `ids-run-${run}`,
  ];
  const r = spawnSync(process.execPath, [CLI_BIN, ...args, ...(json ? ['--json'] : [])], {
    env: { ...process.env, DATABASE_URL: databaseUrl() },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

beforeAll(async () => {
  ensureBuiltCli();
  ledger = await createLedger({
    connectionString: databaseUrl(),
    schema,
    telemetry: false,
    ...TEST_DISTRIBUTION,
  });
  const tool = ledger.tool({
    name: 'export_ids',
    kind: 'mutation',
    handler: async (input) => {
      const ids = runs[(input as { run: number }).run] ?? [];
      return {
        ids,
        // Sentences of ten, each under the 4,096-character cap applied to one string before scrubbing.
        notes: chunk(ids, 10).map((part) => `Exported ${part.join(', ')} for the customer.`),
        contact: `Customer notes: ${piiValues.join(' ; ')}`,
      };
    },
  });
  for (const [run] of runs.entries()) await tool.call({ run }, { tenant: 'acme', key: `ids-run-${run}` });
}, 120_000);

afterAll(async () => {
  await ledger?.close();
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

describe('tool-ledger inspect shows identifiers as they are', () => {
  it(`keeps all ${identifiers.length} identifiers unaltered in its text and JSON output, and hides the personal data beside them`, () => {
    expect(piiValues.length).toBeGreaterThan(20);
    for (const [run, ids] of runs.entries()) {
      const text = inspect(run, false);
      const result = JSON.stringify((JSON.parse(inspect(run, true)) as { result: unknown }).result);
      const count = (haystack: string, value: string) => haystack.split(value).length - 1;
      // Each identifier twice: in the list and in a sentence.
      expect(
        ids.filter((id) => count(text, JSON.stringify(id).slice(1, -1)) < 2 && count(text, id) < 2),
      ).toEqual([]);
      expect(ids.filter((id) => count(result, JSON.stringify(id).slice(1, -1)) < 2)).toEqual([]);
      expect(piiValues.filter((value) => text.includes(value) || result.includes(value))).toEqual([]);
    }
  });
});
