import { describe, expect, it } from 'vitest';
import { MIN_KEY_HASH_SECRET_BYTES, publicConfig, resolveConfig } from '../../../src/config/ledger.js';
import { createLedger, ToolLedgerError } from '../../../src/index.js';

/** Issue 26: `ledger.config`, which applications log at start, holds no secret; a guessable secret is refused. */

const GOOD = 'a-secret-of-more-than-16-bytes';

describe('the key-hash secret in the config', () => {
  it.each<[string, { keyHashSecret?: string }, Record<string, string>, string]>([
    ['a one-character option', { keyHashSecret: 's' }, {}, 'telemetry.keyHashSecret is 1 byte long'],
    ['a 15-byte option', { keyHashSecret: 'x'.repeat(15) }, {}, 'is 15 bytes long'],
    [
      'a short variable',
      {},
      { TOOL_LEDGER_KEY_HASH_SECRET: 'env' },
      '$TOOL_LEDGER_KEY_HASH_SECRET is 3 bytes',
    ],
    // Bytes, not characters: five 3-byte characters are 15 bytes.
    ['15 bytes in 5 characters', { keyHashSecret: '秘密秘密秘' }, {}, 'is 15 bytes long'],
  ])('refuses %s with CONFIG_INVALID, saying what to do and not echoing it', (_, telemetry, env, message) => {
    let thrown: unknown;
    try {
      resolveConfig({ pglite: 'memory://', telemetry }, env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ToolLedgerError);
    const error = thrown as ToolLedgerError;
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.retryable).toBe(false);
    expect(error.message).toContain(message);
    expect(error.message).toContain(`at least ${MIN_KEY_HASH_SECRET_BYTES}`);
    expect(error.message).toContain('openssl rand -hex 32');
    const secret = telemetry.keyHashSecret ?? env.TOOL_LEDGER_KEY_HASH_SECRET ?? '';
    if (secret.length >= 3) expect(error.message).not.toContain(secret);
  });

  it('accepts 16 bytes, an unset or empty secret, and any variable when telemetry is off', () => {
    expect(() =>
      resolveConfig({ pglite: 'memory://', telemetry: { keyHashSecret: 'x'.repeat(16) } }, {}),
    ).not.toThrow();
    expect(() => resolveConfig({ pglite: 'memory://' }, {})).not.toThrow();
    expect(() => resolveConfig({ pglite: 'memory://', telemetry: { keyHashSecret: '' } }, {})).not.toThrow();
    // The option wins over the variable, as in telemetry, so a short variable beside a good option is unused.
    expect(() =>
      resolveConfig(
        { pglite: 'memory://', telemetry: { keyHashSecret: GOOD } },
        { TOOL_LEDGER_KEY_HASH_SECRET: 'x' },
      ),
    ).not.toThrow();
    expect(() =>
      resolveConfig({ pglite: 'memory://', telemetry: false }, { TOOL_LEDGER_KEY_HASH_SECRET: 'x' }),
    ).not.toThrow();
  });

  it('refuses it from createLedger too, before opening anything', async () => {
    await expect(
      createLedger({ pglite: 'memory://', telemetry: { keyHashSecret: 'short' } }),
    ).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
  });

  it('ledger.config shows neither the secret nor a connection password, and stays frozen', async () => {
    const ledger = await createLedger({ pglite: 'memory://', telemetry: { keyHashSecret: GOOD } });
    try {
      const logged = JSON.stringify(ledger.config);
      expect(logged).not.toContain(GOOD);
      expect(ledger.config.telemetry).toMatchObject({ keyHashSecret: '[REDACTED]' });
      expect(Object.isFrozen(ledger.config)).toBe(true);
      expect(Object.isFrozen(ledger.config.telemetry)).toBe(true);
      // The ledger still hashes under the real secret: redaction is of the view only.
      expect(ledger.config.schema).toBe('tool_ledger');
    } finally {
      await ledger.close();
    }
    for (const url of [
      'postgres://app:hunter2-password@db.example:5432/app',
      'postgres://app@db.example/app?password=hunter2-password',
      "host=db.example user=app password='hunter2-password' dbname=app",
      'host=db.example password=hunter2-password dbname=app',
      // Multi-host URLs, which WHATWG URL refuses (a port list) or reads as one host named "a,b".
      'postgres://app:hunter2-password@db-a:5432,db-b:5433/app?target_session_attrs=read-write',
      'postgres://app:hunter2-password@db-a,db-b/app?target_session_attrs=read-write',
      'postgres://app@[::1]:5432,db-b:5433/app?password=hunter2-password',
    ]) {
      const shown = publicConfig(resolveConfig({ connectionString: url, telemetry: false }, {}));
      expect(JSON.stringify(shown)).not.toContain('hunter2');
      expect(shown.database).toMatchObject({ kind: 'connectionString' });
    }
  });
});
