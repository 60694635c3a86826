// Loaded before the server with `--import`: OpenTelemetry must be running, and the MCP SDK instrumented, before
// the server's modules load. With OTEL_EXPORTER_OTLP_ENDPOINT set, traces, metrics and logs go there over OTLP;
// otherwise spans stay in memory and a summary is written to stderr when the server stops (stdout belongs to
// the MCP protocol, so nothing else may write there).
import { register } from 'node:module';
// In your project: import { ToolLedgerMcpInstrumentation } from 'tool-ledger/mcp-instrumentation';
import { ToolLedgerMcpInstrumentation } from '../../src/integrations/mcp-instrumentation/index.js';
// In your project: import { startTelemetry } from 'tool-ledger/otel';
import { startTelemetry } from '../../src/otel/index.js';

// Lets the instrumentation patch ES modules (the MCP SDK is one) imported from here on.
register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);

const telemetry = startTelemetry({
  serviceName: 'tool-ledger-mcp-example',
  instrumentations: [new ToolLedgerMcpInstrumentation()],
});
// Handed to server.ts, which flushes it (and prints the in-memory summary) when the session ends.
(globalThis as Record<symbol, unknown>)[Symbol.for('tool-ledger.example.telemetry')] = telemetry;
