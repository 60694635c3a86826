import { createRequire } from 'node:module';
import * as otelApi from '@opentelemetry/api';
import type * as LogsApi from '@opentelemetry/api-logs';

/** The part of a logs API this package uses: the global LoggerProvider registry. */
export type LogsEntry = Pick<typeof LogsApi, 'logs'>;

// Where the SDK registers its LoggerProvider depends on its line. @opentelemetry/api 1.10 carries the logs API
// itself, and the 3.x SDK (which requires api 1.10) registers there; the 2.x SDK (which requires api < 1.10)
// registers with @opentelemetry/api-logs, whose global is a different one. So the API that has `logs` wins, and
// api-logs, an optional peer, is loaded on first use only for the 2.x line: a static import would make the whole
// package fail to load for users who only install @opentelemetry/api. Logs are skipped when neither has it.
let cached: LogsEntry | null | undefined;

export function loadLogsApi(): LogsEntry | undefined {
  if (cached === undefined) {
    const builtIn = (otelApi as { logs?: LogsEntry['logs'] }).logs;
    if (builtIn !== undefined) {
      cached = { logs: builtIn };
    } else {
      try {
        cached = createRequire(import.meta.url)('@opentelemetry/api-logs') as LogsEntry;
      } catch {
        cached = null;
      }
    }
  }
  return cached ?? undefined;
}
