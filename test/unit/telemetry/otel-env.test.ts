import { describe, expect, it } from 'vitest';
import { readOtelEnv } from '../../../src/otel/env.js';

describe('readOtelEnv: OTLP protocol', () => {
  it('defaults every signal to http/json', () => {
    const { protocols } = readOtelEnv({});
    expect(protocols).toEqual({
      traces: { protocol: 'http/json', variable: undefined },
      metrics: { protocol: 'http/json', variable: undefined },
      logs: { protocol: 'http/json', variable: undefined },
    });
  });

  it('takes the generic variable, and lets a per-signal variable win over it', () => {
    const { protocols } = readOtelEnv({
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: ' GRPC ',
    });
    expect(protocols.traces).toEqual({ protocol: 'http/protobuf', variable: 'OTEL_EXPORTER_OTLP_PROTOCOL' });
    expect(protocols.metrics.protocol).toBe('http/protobuf');
    expect(protocols.logs).toEqual({ protocol: 'grpc', variable: 'OTEL_EXPORTER_OTLP_LOGS_PROTOCOL' });
  });

  it('treats an empty variable as unset', () => {
    expect(readOtelEnv({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: '  ' }).protocols.traces.protocol).toBe(
      'http/json',
    );
  });

  it('rejects an unknown protocol with CONFIG_INVALID naming the variable and the choices', () => {
    expect(() => readOtelEnv({ OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http' })).toThrow(
      expect.objectContaining({
        name: 'ToolLedgerError',
        code: 'CONFIG_INVALID',
        message: expect.stringMatching(
          /OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="http" is not an OTLP protocol; set it to http\/json, http\/protobuf, grpc/,
        ),
      }),
    );
  });
});
