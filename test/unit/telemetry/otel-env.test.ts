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

describe('readOtelEnv: exporters', () => {
  it('exports every signal over OTLP unless a variable says otherwise, and notes whether one asked', () => {
    expect(readOtelEnv({})).toMatchObject({
      exporters: { traces: ['otlp'], metrics: ['otlp'], logs: ['otlp'] },
      exporterRequested: false,
    });
  });

  it('reads lists, lets none switch a signal off, and counts only real exporters as a request', () => {
    const env = readOtelEnv({
      OTEL_TRACES_EXPORTER: 'otlp, Console',
      OTEL_METRICS_EXPORTER: 'console,none',
      OTEL_LOGS_EXPORTER: 'none',
    });
    expect(env.exporters).toEqual({ traces: ['otlp', 'console'], metrics: [], logs: [] });
    expect(env.exporterRequested).toBe(true);
    expect(readOtelEnv({ OTEL_LOGS_EXPORTER: 'none' }).exporterRequested).toBe(false);
  });

  it('rejects an exporter it cannot build, naming the variable, the exporter and the choices', () => {
    expect(() => readOtelEnv({ OTEL_TRACES_EXPORTER: 'otlp,zipkin' })).toThrow(
      expect.objectContaining({
        name: 'ToolLedgerError',
        code: 'CONFIG_INVALID',
        message: expect.stringContaining(
          'OTEL_TRACES_EXPORTER="otlp,zipkin" names an exporter this bootstrap does not build (zipkin); use otlp, console or none',
        ),
      }),
    );
  });

  it('OTEL_TRACES_EXPORTER=console alone leaves metrics and logs off, not on OTLP at localhost', () => {
    expect(readOtelEnv({ OTEL_TRACES_EXPORTER: 'console' }).exporters).toEqual({
      traces: ['console'],
      metrics: [],
      logs: [],
    });
    expect(
      readOtelEnv({ OTEL_TRACES_EXPORTER: 'console', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' })
        .exporters.metrics,
    ).toEqual(['otlp']);
    expect(readOtelEnv({}).exporters.logs).toEqual(['otlp']);
  });
});
