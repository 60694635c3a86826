import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTelemetry } from '../../../src/otel/index.js';
import { ATTR, METRIC } from '../../../src/telemetry/vocabulary.js';
import { pgliteBackend } from '../../support/db.js';

const OTEL_VARS = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
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

async function receiver(): Promise<{ server: Server; url: string; bodies: Map<string, string[]> }> {
  const bodies = new Map<string, string[]>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const list = bodies.get(req.url ?? '') ?? [];
      list.push(Buffer.concat(chunks).toString('utf8'));
      bodies.set(req.url ?? '', list);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies };
}

describe('startTelemetry', () => {
  const backend = pgliteBackend();

  it('keeps spans in memory and prints a readable summary when no OTLP endpoint is set', async () => {
    // Prepare: the ledger exists before the SDK starts, as in an app that imports it first
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    const ledger = await backend.open({ telemetry: { keyHashSecret: 's' } });
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
});
