import { describe, expect, it } from 'vitest';
import { createOtelObserver } from '../../../src/telemetry/observer.js';
import type { TelemetryOptions } from '../../../src/telemetry/options.js';

describe('telemetry options', () => {
  it.each<[string, unknown]>([
    ['keyMode', { keyMode: 'plain' }],
    ['metricTenants', { metricTenants: 'acme' }],
    ['metricTenants', { metricTenants: [1] }],
    ['maxContentLength', { maxContentLength: -1 }],
    ['maxContentLength', { maxContentLength: 1.5 }],
    ['keyHashSecret', { keyHashSecret: 42 }],
    ['captureContent', { captureContent: 'yes' }],
    ['redactor', { redactor: { redactText: (t: string) => t } }],
  ])('rejects a bad %s at creation with CONFIG_INVALID naming the option', (name, options) => {
    expect(() => createOtelObserver(options as TelemetryOptions)).toThrow(
      expect.objectContaining({
        code: 'CONFIG_INVALID',
        message: expect.stringContaining(`telemetry.${name}`),
      }),
    );
  });

  it('accepts the documented values', () => {
    expect(() =>
      createOtelObserver({
        keyMode: 'hash',
        metricTenants: ['acme'],
        maxContentLength: 0,
        keyHashSecret: 's',
        captureContent: true,
      }),
    ).not.toThrow();
  });
});
