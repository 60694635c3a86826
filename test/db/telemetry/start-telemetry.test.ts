import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { startTelemetry } from '../../../src/otel/index.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { pgliteBackend } from '../../support/db.js';

const OTEL_VARS = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_LOGS_PROTOCOL',
  'OTEL_EXPORTER_OTLP_LOGS_ENDPOINT',
  'OTEL_SERVICE_NAME',
  'OTEL_LOGS_EXPORTER',
  'OTEL_METRIC_EXPORT_INTERVAL',
];
const saved = Object.fromEntries(OTEL_VARS.map((name) => [name, process.env[name]]));

afterEach(() => {
  for (const name of OTEL_VARS) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

interface Receiver {
  server: Server;
  url: string;
  /** Request bodies by path, as latin1 text: JSON stays readable and protobuf strings show up as they are. */
  bodies: Map<string, string[]>;
  contentTypes: Set<string>;
}

async function receiver(): Promise<Receiver> {
  const bodies = new Map<string, string[]>();
  const contentTypes = new Set<string>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    contentTypes.add(String(req.headers['content-type']));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const list = bodies.get(req.url ?? '') ?? [];
      list.push(Buffer.concat(chunks).toString('latin1'));
      bodies.set(req.url ?? '', list);
      // An empty body is a valid answer for both encodings (an empty protobuf message, or no JSON at all).
      res.writeHead(200, { 'content-type': String(req.headers['content-type']) }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, contentTypes };
}

const GRPC_SERVICES = {
  traces: 'opentelemetry.proto.collector.trace.v1.TraceService',
  metrics: 'opentelemetry.proto.collector.metrics.v1.MetricsService',
  logs: 'opentelemetry.proto.collector.logs.v1.LogsService',
} as const;

/** A real gRPC server with the three OTLP Export methods, keeping the raw request bytes of each. */
async function grpcReceiver(): Promise<{
  url: string;
  received: Map<string, Buffer[]>;
  stop(): Promise<void>;
}> {
  const server = new grpc.Server();
  const received = new Map<string, Buffer[]>();
  const raw = (b: Buffer) => b;
  for (const [signal, service] of Object.entries(GRPC_SERVICES)) {
    server.addService(
      {
        Export: {
          path: `/${service}/Export`,
          requestStream: false,
          responseStream: false,
          requestSerialize: raw,
          requestDeserialize: raw,
          responseSerialize: raw,
          responseDeserialize: raw,
        },
      },
      {
        Export: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
          received.set(signal, [...(received.get(signal) ?? []), call.request]);
          callback(null, Buffer.alloc(0));
        },
      },
    );
  }
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    stop: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}

async function oneCall(backend: ReturnType<typeof pgliteBackend>, key: string): Promise<void> {
  const ledger = await backend.open({ telemetry: {} });
  await ledger
    .tool({ name: 'send_invoice', kind: 'mutation', handler: () => ({ sent: true }) })
    .invoke({}, { key });
}

describe('startTelemetry', () => {
  const backend = pgliteBackend();

  it('keeps spans in memory and prints a readable summary when no OTLP endpoint is set', async () => {
    // Prepare: the ledger exists before the SDK starts, as in an app that imports it first
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    const ledger = await backend.open({ telemetry: { keyHashSecret: 'test-key-hash-secret' } });
    const tool = ledger.tool({ name: 'send_invoice', kind: 'mutation', handler: () => ({ sent: true }) });
    const telemetry = startTelemetry({ serviceName: 'demo' });

    // Act
    await tool.invoke({}, { key: 'inv_2024_0042' });
    await tool.invoke({}, { key: 'inv_2024_0042' });
    await tool.invoke({}, { key: 'refund:maria.gonzalez@example.com' });

    // Assess
    expect(telemetry.mode).toBe('memory');
    const spans = telemetry.finishedSpans().filter((s) => s.name === 'execute_tool send_invoice');
    expect(spans.map((s) => s.attributes[ATTR.OUTCOME])).toEqual(['executed', 'replayed', 'executed']);
    expect(spans[1]?.links[0]).toEqual({
      traceId: spans[0]?.traceId,
      spanId: spans[0]?.spanId,
      type: 'original_execution',
    });
    const summary = telemetry.summary();
    expect(summary).toMatch(/^demo: \d+ spans/);
    expect(summary).toMatch(
      /execute_tool send_invoice +replayed .*key=inv_2024_0042 .*→ original_execution span/,
    );
    expect(summary).toContain('key_hash=');
    expect(summary).not.toContain('maria');
    await telemetry.shutdown();
    await telemetry.shutdown();
  });

  it('exports traces, metrics and logs over OTLP/HTTP, honouring OTEL_* variables, and flushes on shutdown', async () => {
    const otlp = await receiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url;
    process.env.OTEL_SERVICE_NAME = 'billing-agent';
    process.env.OTEL_METRIC_EXPORT_INTERVAL = '600000';
    const telemetry = startTelemetry({ serviceName: 'ignored-because-env-wins' });
    expect(() => startTelemetry({ serviceName: 'twice' })).toThrow(/already running/);
    const ledger = await backend.open({ telemetry: {} });
    const tool = ledger.tool({ name: 'send_invoice', kind: 'mutation', handler: () => ({ sent: true }) });

    await tool.invoke({}, { key: 'k-otlp' });
    await telemetry.shutdown();

    expect(telemetry.mode).toBe('otlp');
    expect(telemetry.finishedSpans()).toEqual([]);
    const traces = (otlp.bodies.get('/v1/traces') ?? []).join('\n');
    expect(traces).toContain('execute_tool send_invoice');
    expect(traces).toContain('billing-agent');
    expect((otlp.bodies.get('/v1/metrics') ?? []).join('\n')).toContain(METRIC.TOOL_CALLS);
    expect((otlp.bodies.get('/v1/logs') ?? []).join('\n')).toContain('tool_ledger.decision');
    await new Promise((resolve) => otlp.server.close(resolve));
  });

  it('leaves out a signal whose exporter is set to none', async () => {
    const otlp = await receiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url;
    process.env.OTEL_LOGS_EXPORTER = 'none';
    const telemetry = startTelemetry({ serviceName: 'quiet' });
    const ledger = await backend.open({ telemetry: {} });
    await ledger.tool({ name: 'ping', kind: 'mutation', handler: () => 'pong' }).invoke({}, { key: 'p' });
    await telemetry.shutdown();

    expect(otlp.bodies.has('/v1/traces')).toBe(true);
    expect(otlp.bodies.has('/v1/logs')).toBe(false);
    await new Promise((resolve) => otlp.server.close(resolve));
  });

  it('exports over OTLP/HTTP with protobuf bodies when OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf', async () => {
    const otlp = await receiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/protobuf';
    const telemetry = startTelemetry({ serviceName: 'proto-agent' });
    expect(telemetry.summary()).toContain(
      'traces otlp (http/protobuf), metrics otlp (http/protobuf), logs otlp (http/protobuf)',
    );

    await oneCall(backend, 'k-proto');
    await telemetry.shutdown();

    expect([...otlp.contentTypes]).toEqual(['application/x-protobuf']);
    const traces = (otlp.bodies.get('/v1/traces') ?? []).join('');
    // Protobuf carries strings as raw UTF-8 bytes, so the span name and attribute values are there to find.
    expect(traces).toContain('execute_tool send_invoice');
    expect(traces).toContain('proto-agent');
    expect(traces).not.toContain('"resourceSpans"');
    expect((otlp.bodies.get('/v1/metrics') ?? []).join('')).toContain(METRIC.TOOL_CALLS);
    expect((otlp.bodies.get('/v1/logs') ?? []).join('')).toContain('tool_ledger.decision');
    await new Promise((resolve) => otlp.server.close(resolve));
  });

  it('exports over OTLP/gRPC when OTEL_EXPORTER_OTLP_PROTOCOL=grpc, and lets a per-signal protocol differ', async () => {
    const otlp = await grpcReceiver();
    const http = await receiver();
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url;
    process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'grpc';
    // Logs alone go over OTLP/HTTP JSON, to a receiver of their own.
    process.env.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL = 'http/json';
    process.env.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT = `${http.url}/v1/logs`;
    const telemetry = startTelemetry({ serviceName: 'grpc-agent' });
    expect(telemetry.summary()).toContain('traces otlp (grpc), metrics otlp (grpc), logs otlp (http/json)');

    await oneCall(backend, 'k-grpc');
    await telemetry.shutdown();

    const traces = Buffer.concat(otlp.received.get('traces') ?? []).toString('latin1');
    expect(traces).toContain('execute_tool send_invoice');
    expect(traces).toContain('grpc-agent');
    expect(Buffer.concat(otlp.received.get('metrics') ?? []).toString('latin1')).toContain(METRIC.TOOL_CALLS);
    expect(otlp.received.has('logs')).toBe(false);
    expect([...http.bodies.keys()]).toEqual(['/v1/logs']);
    expect(http.bodies.get('/v1/logs')?.join('')).toContain('"tool_ledger.decision"');
    await otlp.stop();
    await new Promise((resolve) => http.server.close(resolve));
  });

  it('refuses an unknown OTLP protocol before registering anything', () => {
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = 'http://127.0.0.1:4318';
    process.env.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL = 'thrift';
    expect(() => startTelemetry({ serviceName: 'bad-protocol' })).toThrow(
      expect.objectContaining({
        name: 'ToolLedgerError',
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('OTEL_EXPORTER_OTLP_LOGS_PROTOCOL="thrift" is not an OTLP protocol'),
      }),
    );
    // Nothing was left running: a correct start works straight away.
    delete process.env.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL;
    return startTelemetry({ serviceName: 'good-protocol', mode: 'memory' }).shutdown();
  });
});
