// The production-like OpenTelemetry SDK the telemetry benchmarks register, and the OTLP sink it exports to.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { context, metrics, SpanStatusCode, trace } from '@opentelemetry/api';
import { logs, SeverityNumber } from '@opentelemetry/api-logs';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

/** An OTLP/HTTP sink in a child process, so receiving costs this process nothing. */
export async function startSink() {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(200, {'content-type': 'application/json'}).end('{}')); })
        .listen(0, '127.0.0.1', function () { process.stdout.write(String(this.address().port) + '\\n'); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [chunk] = await once(child.stdout, 'data');
  return { url: `http://127.0.0.1:${String(chunk).trim()}`, stop: () => child.kill() };
}

/** Counts what reaches the exporter, so a processor that dropped items under load would show in the report. */
function counted(exporter, counts, signal) {
  return {
    export(items, done) {
      counts[signal] += items.length;
      exporter.export(items, done);
    },
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
    shutdown: () => exporter.shutdown(),
  };
}

/** A production-like SDK, created once and registered globally only while the "with SDK" side runs. */
export function createSdk(url) {
  const exported = { spans: 0, logs: 0 };
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [
      new BatchSpanProcessor(counted(new OTLPTraceExporter({ url: `${url}/v1/traces` }), exported, 'spans')),
    ],
  });
  const meterProvider = new MeterProvider({
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: `${url}/v1/metrics` }),
        exportIntervalMillis: 1000,
      }),
    ],
  });
  const loggerProvider = new LoggerProvider({
    processors: [
      new BatchLogRecordProcessor({
        exporter: counted(new OTLPLogExporter({ url: `${url}/v1/logs` }), exported, 'logs'),
      }),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  return {
    exported,
    register() {
      context.setGlobalContextManager(contextManager);
      trace.setGlobalTracerProvider(tracerProvider);
      metrics.setGlobalMeterProvider(meterProvider);
      logs.setGlobalLoggerProvider(loggerProvider);
    },
    unregister() {
      trace.disable();
      metrics.disable();
      logs.disable();
      context.disable();
    },
    flush: () => Promise.all([tracerProvider.forceFlush(), loggerProvider.forceFlush()]),
    shutdown: () =>
      Promise.all([tracerProvider.shutdown(), meterProvider.shutdown(), loggerProvider.shutdown()]),
  };
}

/** What a user would add by hand: one span, one log record and one counter increment per call. */
export function handInstrumentation() {
  const tracer = trace.getTracer('hand-written');
  const logger = logs.getLogger('hand-written');
  const counter = metrics.getMeter('hand-written').createCounter('tool_calls');
  return (work, key) =>
    tracer.startActiveSpan('execute_tool create_invoice', async (span) => {
      try {
        const value = await work();
        counter.add(1, { tool: 'create_invoice', outcome: 'ok' });
        logger.emit({ severityNumber: SeverityNumber.INFO, body: 'tool call', attributes: { key } });
        return value;
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    });
}
