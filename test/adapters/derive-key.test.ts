import { describe, expect, it } from 'vitest';
import { deriveKey, MAX_KEY_LENGTH, ToolLedgerError } from '../../src/index.js';

describe('deriveKey', () => {
  it('is stable for the same intent, whatever the key order of the instruction', () => {
    const a = deriveKey({
      runId: 'conv-1',
      toolCallId: 'call_1',
      tool: 'send_email',
      instruction: { to: 'a', n: 1 },
    });
    const b = deriveKey({
      tool: 'send_email',
      instruction: { n: 1, to: 'a' },
      toolCallId: 'call_1',
      runId: 'conv-1',
    });
    expect(a).toBe(b);
    expect(a).toMatch(/^tlk1_[A-Za-z0-9_-]{43}$/);
    expect(a.length).toBeLessThanOrEqual(MAX_KEY_LENGTH);
  });

  it.each([
    ['runId', { runId: 'conv-2', toolCallId: 'call_1' }],
    ['toolCallId', { runId: 'conv-1', toolCallId: 'call_2' }],
    ['tool', { runId: 'conv-1', toolCallId: 'call_1', tool: 'other' }],
    ['step', { runId: 'conv-1', toolCallId: 'call_1', step: 2 }],
    ['instruction', { runId: 'conv-1', toolCallId: 'call_1', instruction: 'send it tomorrow' }],
  ])('changes when %s changes', (_field, changed) => {
    const base = deriveKey({ runId: 'conv-1', toolCallId: 'call_1' });
    expect(deriveKey(changed)).not.toBe(base);
  });

  it('keeps parts apart: no separator inside an id can shift one part into the next', () => {
    expect(deriveKey({ runId: 'a:b', toolCallId: 'c' })).not.toBe(
      deriveKey({ runId: 'a', toolCallId: 'b:c' }),
    );
    expect(deriveKey({ runId: 'a', step: 1 })).not.toBe(deriveKey({ runId: 'a', step: '1' }));
  });

  it('never contains the identifiers themselves', () => {
    expect(deriveKey({ runId: 'alice@example.com', toolCallId: 'call_1' })).not.toContain('alice');
  });

  it.each([
    [{ runId: '' }],
    [{ runId: 'r', toolCallId: '' }],
    [{ runId: 'r', step: Number.NaN }],
    [{ runId: 'r', instruction: { n: 10n } }],
    [null],
  ])('refuses bad input #%# with KEY_INVALID', (input) => {
    const error = (() => {
      try {
        deriveKey(input as never);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ToolLedgerError);
    expect((error as ToolLedgerError).code).toBe('KEY_INVALID');
  });
});
