import { diag } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { resolveSecret } from '../../../src/telemetry/key-attributes.js';
import { configuredSecret } from '../../../src/telemetry/key-secret.js';
import { captureDiagWarnings } from '../../support/diag.js';

const warnings: string[] = [];

beforeAll(() => captureDiagWarnings(warnings));
afterAll(() => diag.disable());
beforeEach(() => {
  warnings.length = 0;
});

describe('which key-hash secret is used', () => {
  it.each([
    ['the option over the variable', { keyHashSecret: 'opt' }, { TOOL_LEDGER_KEY_HASH_SECRET: 'env' }, 'opt'],
    ['the variable when the option is unset', {}, { TOOL_LEDGER_KEY_HASH_SECRET: 'env' }, 'env'],
    [
      'the variable when the option is empty',
      { keyHashSecret: '' },
      { TOOL_LEDGER_KEY_HASH_SECRET: 'env' },
      'env',
    ],
    ['none when both are empty', { keyHashSecret: '' }, { TOOL_LEDGER_KEY_HASH_SECRET: '' }, undefined],
  ])('configured: %s', (_what, options, env, expected) => {
    expect(configuredSecret(options, env)).toBe(expected);
  });

  it('prefers the configured secret, then the deployment one, without a warning', () => {
    expect(resolveSecret('configured', { secret: 'stored' })).toBe('configured');
    expect(resolveSecret(undefined, { secret: 'stored' })).toBe('stored');
    expect(warnings).toEqual([]);
  });

  it('makes a process secret only when there is neither, and says why and what to do', () => {
    const made = resolveSecret(undefined, { missing: 'schema "x" has no settings table yet: migrate' });
    expect(made).toMatch(/^[0-9a-f]{64}$/);
    expect(warnings.join('\n')).toContain('schema "x" has no settings table yet: migrate');
    const alone = resolveSecret(undefined);
    expect(alone).not.toBe(made);
    expect(warnings.join('\n')).toContain('there is no ledger to hold the deployment');
  });
});
