// The production-like OpenTelemetry SDK the telemetry benchmarks register, and the OTLP sink it exports to.
import { spawn } from 'node:child_process';
import { createHmac, createSecretKey } from 'node:crypto';
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
import { ATTR, DURATION_BUCKETS_SECONDS, LOG_EVENT_NAME, METRIC } from '../dist/telemetry/vocabulary.js';

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

/** The log record's attributes cut to the four that every signal must carry: tool, tenant, key and outcome. */
const fewer = (attributes) => ({
  [ATTR.GEN_AI_TOOL_NAME]: attributes[ATTR.GEN_AI_TOOL_NAME],
  [ATTR.TENANT_ID]: attributes[ATTR.TENANT_ID],
  [ATTR.IDEMPOTENCY_KEY_HASH]: attributes[ATTR.IDEMPOTENCY_KEY_HASH],
  [ATTR.OUTCOME]: attributes[ATTR.OUTCOME],
});

/**
 * tool-ledger's telemetry content, written by hand on the same SDK: what tool-ledger's span, log record and metrics
 * carry for the bench's first executions, emitted the plainest way. The span and the log record both get the nine
 * attributes (operation, tool name and type, tenant, tool kind, the key's HMAC, the parameter hash's HMAC,
 * outcome, attempt); metrics get one counter increment, a histogram point per statement and one for the handler.
 * It prices this content on this SDK whoever emits it, so tool-ledger's telemetry can be weighed against the same
 * content rather than against a span with no attributes. `omit` leaves one piece out, to price each piece:
 * `hmacs` (the key and the parameter hash go out as they are), `histograms`, `logAttributes` (the log record keeps tool, tenant, key
 * and outcome) or `logRecord`.
 */
export function handContentInstrumentation(secret, { omit } = {}) {
  const tracer = trace.getTracer('hand-written-content');
  const logger = logs.getLogger('hand-written-content');
  const meter = metrics.getMeter('hand-written-content');
  const seconds = { unit: 's', advice: { explicitBucketBoundaries: [...DURATION_BUCKETS_SECONDS] } };
  const calls = meter.createCounter(METRIC.TOOL_CALLS);
  const executeDuration = meter.createHistogram(METRIC.EXECUTE_TOOL_DURATION, seconds);
  const operationDuration = meter.createHistogram(METRIC.LEDGER_OPERATION_DURATION, seconds);
  const secretKey = createSecretKey(Buffer.from(secret, 'utf8'));
  const hmac =
    omit === 'hmacs'
      ? (text) => text
      : (text) => createHmac('sha256', secretKey).update(text, 'utf8').digest('hex');
  const histograms = omit !== 'histograms';
  const tool = 'create_invoice';
  const labels = { [ATTR.GEN_AI_TOOL_NAME]: tool, [ATTR.TOOL_KIND]: 'mutation' };
  return (work, key) => {
    // tool-ledger's key check reads the bench keys' digit groups (`…_3_42`) as a date or a phone number, so
    // they go out as an HMAC, never raw; the check is a few regular expressions, the HMAC is the cost.
    const attributes = {
      [ATTR.GEN_AI_OPERATION_NAME]: 'execute_tool',
      [ATTR.GEN_AI_TOOL_NAME]: tool,
      [ATTR.GEN_AI_TOOL_TYPE]: 'function',
      [ATTR.TENANT_ID]: 'bench',
      [ATTR.TOOL_KIND]: 'mutation',
      [ATTR.IDEMPOTENCY_KEY_HASH]: hmac(key),
    };
    return tracer.startActiveSpan(`execute_tool ${tool}`, { attributes }, async (span) => {
      let outcome = 'executed';
      const observe = {
        paramsHash(hash) {
          attributes[ATTR.PARAMS_HASH] = hmac(hash);
          span.setAttribute(ATTR.PARAMS_HASH, attributes[ATTR.PARAMS_HASH]);
        },
        operation(name, s) {
          if (histograms) operationDuration.record(s, { [ATTR.LEDGER_OPERATION]: name });
        },
        executed(s) {
          if (histograms) executeDuration.record(s, { ...labels, [ATTR.OUTCOME]: 'executed' });
        },
        replayed() {
          outcome = 'replayed';
        },
      };
      try {
        const value = await work(observe);
        attributes[ATTR.OUTCOME] = outcome;
        attributes[ATTR.ATTEMPT] = 1;
        span.setAttributes({ [ATTR.OUTCOME]: outcome, [ATTR.ATTEMPT]: 1 });
        calls.add(1, { ...labels, [ATTR.OUTCOME]: outcome });
        if (omit !== 'logRecord') {
          logger.emit({
            eventName: LOG_EVENT_NAME,
            severityNumber: SeverityNumber.INFO,
            severityText: 'INFO',
            body: `execute_tool ${tool} ${outcome}`,
            attributes: omit === 'logAttributes' ? fewer(attributes) : attributes,
          });
        }
        return value;
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    });
  };
}
