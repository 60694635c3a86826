import { createRequire } from 'node:module';
import type * as LogsApi from '@opentelemetry/api-logs';

// @opentelemetry/api-logs is an optional peer: a static import would make the whole package fail to load for users
// who only install @opentelemetry/api. It is loaded on first use instead, and logs are skipped when it is absent.
let cached: typeof LogsApi | null | undefined;

export function loadLogsApi(): typeof LogsApi | undefined {
  if (cached === undefined) {
    try {
      cached = createRequire(import.meta.url)('@opentelemetry/api-logs') as typeof LogsApi;
    } catch {
      cached = null;
    }
  }
  return cached ?? undefined;
}
