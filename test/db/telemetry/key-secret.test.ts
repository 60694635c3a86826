import { diag } from '@opentelemetry/api';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLedger, migrationSql } from '../../../src/index.js';
import { hashKey } from '../../../src/telemetry/key-hash.js';
import { loadDeploymentSecret } from '../../../src/telemetry/key-secret.js';
import { ATTR, KEY_HASH_SECRET_ENV } from '../../../src/telemetry/vocabulary.js';
import { backends, databaseUrl, uniqueSchema } from '../../support/db.js';
import { captureDiagWarnings } from '../../support/diag.js';
import { TelemetryHarness } from '../../support/telemetry-harness.js';

/**
 * Issue 11: with no secret configured, every ledger on one schema hashes keys and parameter hashes under the
 * deployment's secret, stored in the schema at the first start, so spans from any process can be found with
 * `tool-ledger hash-key`.
 */

const UNSAFE_KEY = 'refund-for-Priya-Raman';
const warnings: string[] = [];
let savedEnv: string | undefined;

beforeAll(() => {
  savedEnv = process.env[KEY_HASH_SECRET_ENV];
  delete process.env[KEY_HASH_SECRET_ENV];
  captureDiagWarnings(warnings);
});

afterAll(() => {
  diag.disable();
  if (savedEnv !== undefined) process.env[KEY_HASH_SECRET_ENV] = savedEnv;
});

beforeEach(() => {
  warnings.length = 0;
});

const harnesses: TelemetryHarness[] = [];
afterEach(async () => {
  await Promise.all(harnesses.splice(0).map((h) => h.shutdown()));
});

function newHarness(): TelemetryHarness {
  const harness = new TelemetryHarness();
  harnesses.push(harness);
  return harness;
}

/** Every key and parameter-hash attribute one harness saw, on spans and on log records. */
function hashesOf(harness: TelemetryHarness) {
  const pick = (attributes: Record<string, unknown> | undefined) => ({
    key: attributes?.[ATTR.IDEMPOTENCY_KEY],
    keyHash: attributes?.[ATTR.IDEMPOTENCY_KEY_HASH],
    paramsHash: attributes?.[ATTR.PARAMS_HASH],
  });
  return {
    spans: harness.finishedSpans().map((s) => pick(s.attributes)),
    logs: harness.logRecords().map((r) => pick(r.attributes)),
  };
}

describe.each(backends)('the deployment key-hash secret (%s)', (_name, makeBackend) => {
  const backend = makeBackend();
  const storedSecret = async (schema: string) =>
    (
      await backend.sql<{ value: string }>(
        `SELECT value FROM "${schema}".tool_ledger_settings WHERE name = 'key_hash_secret'`,
      )
    )[0]?.value;

  it('two ledgers started together on one schema emit the same key_hash and params_hash, with no warning', async () => {
    // Prepare
    const schema = uniqueSchema('secret');
    const [a, b] = [newHarness(), newHarness()];
    const [ledgerA, ledgerB] = await Promise.all([
      backend.open({ schema, telemetry: a.providers() }),
      backend.open({ schema, telemetry: b.providers() }),
    ]);
    const define = (ledger: typeof ledgerA) =>
      ledger.tool({ name: 'refund', kind: 'mutation', handler: (input: unknown) => ({ refunded: input }) });

    // Act
    const first = await define(ledgerA).invoke({ amount: 12 }, { tenant: 'acme', key: UNSAFE_KEY });
    const replay = await define(ledgerB).invoke({ amount: 12 }, { tenant: 'acme', key: UNSAFE_KEY });

    // Assess
    expect([first.outcome, replay.outcome]).toEqual(['executed', 'replayed']);
    const secret = await storedSecret(schema);
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const expected = {
      key: undefined,
      keyHash: hashKey(UNSAFE_KEY, secret!),
      paramsHash: hashKey(first.paramsHash!, secret!),
    };
    expect(hashesOf(a)).toEqual({ spans: [expected], logs: [expected] });
    expect(hashesOf(b)).toEqual({ spans: [expected], logs: [expected] });
    expect(warnings.filter((w) => w.includes('secret'))).toEqual([]);
  });

  it('keys read tools under the same secret', async () => {
    const schema = uniqueSchema('secret_read');
    const harness = newHarness();
    const ledger = await backend.open({ schema, telemetry: harness.providers() });
    const lookup = ledger.tool({ name: 'lookup', kind: 'read', handler: () => 'found' });

    expect(await lookup.call({}, { key: UNSAFE_KEY })).toBe('found');

    const secret = await storedSecret(schema);
    expect(hashesOf(harness).spans[0]?.keyHash).toBe(hashKey(UNSAFE_KEY, secret!));
  });

  it('uses a configured secret instead, and stores none; a ledger without telemetry stores none either', async () => {
    const schema = uniqueSchema('secret_configured');
    const harness = newHarness();
    const ledger = await backend.open({
      schema,
      telemetry: { ...harness.providers(), keyHashSecret: 'mine-key-hash-secret' },
    });
    const quiet = await backend.open({ schema: uniqueSchema('secret_off'), telemetry: false });
    const tool = ledger.tool({ name: 'refund', kind: 'mutation', handler: () => 1 });

    await tool.call({}, { key: UNSAFE_KEY });

    expect(hashesOf(harness).spans[0]?.keyHash).toBe(hashKey(UNSAFE_KEY, 'mine-key-hash-secret'));
    expect(await storedSecret(schema)).toBeUndefined();
    expect(await storedSecret(quiet.schema)).toBeUndefined();
  });

  it('creates the secret at the first start on a schema migrated without it (migrate: false)', async () => {
    // What a DBA's run of migrationSql() leaves: the table, no row (a ledger without telemetry stores none).
    const { schema } = await backend.open({ schema: uniqueSchema('secret_dba'), telemetry: false });
    expect(await storedSecret(schema)).toBeUndefined();
    const harness = newHarness();
    const ledger = await backend.open({ schema, migrate: false, telemetry: harness.providers() });
    await ledger.tool({ name: 'refund', kind: 'mutation', handler: () => 1 }).call({}, { key: UNSAFE_KEY });

    const secret = await storedSecret(schema);
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(hashesOf(harness).spans[0]?.keyHash).toBe(hashKey(UNSAFE_KEY, secret!));
  });

  it('on a schema without the settings table (migration 4 not applied), still hashes every key, and warns what to do', async () => {
    const { schema } = await backend.open({ schema: uniqueSchema('secret_old'), telemetry: false });
    await backend.sql(`DROP TABLE "${schema}".tool_ledger_settings`);
    const harness = newHarness();
    const ledger = await backend.open({ schema, migrate: false, telemetry: harness.providers() });
    await ledger.tool({ name: 'refund', kind: 'mutation', handler: () => 1 }).call({}, { key: UNSAFE_KEY });

    expect(hashesOf(harness).spans[0]?.keyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(warnings.join('\n')).toContain('has no "' + schema + '".tool_ledger_settings table yet');
    expect(warnings.join('\n')).toContain('tool-ledger migrate');
  });
});

describe('concurrent first starts (postgres)', () => {
  it('all read back the one secret that was stored', async () => {
    const pg = (await import('pg')).default;
    const schema = uniqueSchema('secret_race');
    const pool = new pg.Pool({ connectionString: databaseUrl(), max: 8 });
    try {
      await pool.query(migrationSql(schema));
      const loaded = await Promise.all(
        Array.from({ length: 8 }, () => loadDeploymentSecret(pool as never, schema)),
      );
      const { rows } = await pool.query(`SELECT value FROM "${schema}".tool_ledger_settings`);
      expect(rows).toHaveLength(1);
      expect(new Set(loaded.map((l) => l.secret))).toEqual(new Set([rows[0].value]));
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  });

  it('a configured secret from the environment wins over the stored one', async () => {
    const schema = uniqueSchema('secret_env');
    const harness = newHarness();
    process.env[KEY_HASH_SECRET_ENV] = 'from-env-key-hash-secret';
    try {
      const ledger = await createLedger({
        connectionString: databaseUrl(),
        schema,
        telemetry: harness.providers(),
      });
      await ledger.tool({ name: 'refund', kind: 'mutation', handler: () => 1 }).call({}, { key: UNSAFE_KEY });
      await ledger.close();
      expect(hashesOf(harness).spans[0]?.keyHash).toBe(hashKey(UNSAFE_KEY, 'from-env-key-hash-secret'));
    } finally {
      delete process.env[KEY_HASH_SECRET_ENV];
      const pg = (await import('pg')).default;
      const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  });

  it('an unreachable database fails createLedger (migrate: false) with LEDGER_UNAVAILABLE, unless a secret is set', async () => {
    const unreachable = {
      connectionString: 'postgres://postgres@127.0.0.1:1/none',
      connectTimeoutSeconds: 1,
      migrate: false,
    } as const;
    const error = await createLedger(unreachable).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'LEDGER_UNAVAILABLE', retryable: true });
    const configured = await createLedger({
      ...unreachable,
      telemetry: { keyHashSecret: 'set-key-hash-secret' },
    });
    await configured.close();
  });
});
