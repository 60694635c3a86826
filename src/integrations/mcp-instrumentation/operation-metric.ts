import { type Attributes, type Histogram, type MeterProvider, metrics } from '@opentelemetry/api';
import { describeError } from '../../telemetry/error-info.js';
import type { McpRequestInfo } from '../mcp/types.js';
import {
  MCP_INSTRUMENTATION_ATTR as ATTR,
  MCP_DURATION_BUCKETS_SECONDS,
  MCP_METHOD_TOOLS_CALL,
  MCP_METRIC,
} from './semconv.js';

const SCOPE = 'tool-ledger/mcp-instrumentation';
// Only the error's class name is kept, so no text needs scrubbing.
const KEEP_TEXT = { redactText: (text: string) => text, redactValue: (value: unknown) => value };

/** A failed call: the thrown error, or the `tool_error` an isError result stands for. */
export interface Failure {
  readonly error: unknown;
}

/** `mcp.server.operation.duration` for instrumented tool calls; the meter provider is looked up per call. */
export function operationMetric(provider: () => MeterProvider | undefined): {
  record(seconds: number, tool: string, request: McpRequestInfo, failure: Failure | undefined): void;
} {
  let last: MeterProvider | undefined;
  let histogram: Histogram | undefined;
  const histogramOf = () => {
    const current = provider() ?? metrics.getMeterProvider();
    if (histogram === undefined || current !== last) {
      last = current;
      histogram = current.getMeter(SCOPE).createHistogram(MCP_METRIC.SERVER_OPERATION_DURATION, {
        description:
          'MCP tools/call duration as observed on the server, from receiving the call to its result.',
        unit: 's',
        advice: { explicitBucketBoundaries: [...MCP_DURATION_BUCKETS_SECONDS] },
      });
    }
    return histogram;
  };
  return {
    record(seconds, tool, request, failure) {
      // Ids (session, request) are per call: never metric attributes.
      const attributes: Attributes = {
        [ATTR.METHOD_NAME]: MCP_METHOD_TOOLS_CALL,
        [ATTR.GEN_AI_TOOL_NAME]: tool,
      };
      if (request.protocolVersion) attributes[ATTR.PROTOCOL_VERSION] = request.protocolVersion;
      if (request.transport) attributes[ATTR.NETWORK_TRANSPORT] = request.transport;
      // An isError result arrives as an error named `tool_error`, so both kinds share one classification.
      if (failure !== undefined)
        attributes[ATTR.ERROR_TYPE] = describeError(failure.error, KEEP_TEXT, false).type;
      histogramOf().record(seconds, attributes);
    },
  };
}
