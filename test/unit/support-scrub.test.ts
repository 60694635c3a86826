import { describe, expect, it } from 'vitest';
import { scrubValue } from '../../src/support/scrub.js';

describe('support scrubbing keeps JSON valid', () => {
  it('scrubs JSON held in a string as the structure it is, so it still parses', () => {
    const stored = {
      raw: '{"name": "Maria Garcia", "password": "hunter2", "order": "inv_2024_0042"}',
      list: ['[{"email":"maria@example.com"}]', 'not json {'],
      nested: JSON.stringify({ inner: JSON.stringify({ password: 'x' }) }),
    };
    const out = scrubValue(stored) as Record<string, unknown>;
    const raw = JSON.parse(out.raw as string) as Record<string, unknown>;
    expect(raw).toEqual({ name: '[REDACTED]', password: '[REDACTED]', order: 'inv_2024_0042' });
    const [list, text] = out.list as string[];
    expect(JSON.parse(list as string)).toEqual([{ email: '[REDACTED]' }]);
    expect(text).toBe('not json {');
    const nested = JSON.parse(out.nested as string) as { inner: string };
    expect(JSON.parse(nested.inner)).toEqual({ password: '[REDACTED]' });
    expect(JSON.stringify(out)).not.toMatch(/Maria|hunter2|maria@/);
  });
});
