import { describe, expect, it } from 'vitest';
import { isToolLedgerError } from '../../../src/contract/errors.js';
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
    let caught: unknown;
    try {
      readOtelEnv({ OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http' });
    } catch (error) {
      caught = error;
    }
    expect(isToolLedgerError(caught) && caught.code).toBe('CONFIG_INVALID');
    expect((caught as Error).message).toMatch(
      /OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="http" is not an OTLP protocol; set it to http\/json, http\/protobuf, grpc/,
    );
  });
});
