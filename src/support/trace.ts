import { ATTR } from '../telemetry/vocabulary.js';
import type { KeyForm } from './key-form.js';

/**
 * The story of a key (`inspect --trace`, the console's waterfall): every call made with it, read back from the
 * telemetry backends (Jaeger's HTTP API and VictoriaLogs' LogsQL API), without a Jaeger UI.
 */

/** A link to a trace in Jaeger's UI. */
export function jaegerTraceUrl(base: string, traceId: string): string {
  return `${base.replace(/\/+$/, '')}/trace/${encodeURIComponent(traceId)}`;
}

/** One call made with the key, as its span and/or its decision log record tell it. */
export interface KeyCall {
  readonly time: string;
  /**
   * Microseconds since the epoch, the backends' precision. The OpenTelemetry JS SDK starts spans on whole
   * milliseconds, so calls of one process that start within the same millisecond keep no order.
   */
  readonly timeMicros: number;
  readonly outcome: string | null;
  readonly attempt: number | null;
  readonly waitedMs: number | null;
  readonly traceId: string | null;
  readonly spanId: string | null;
  /** The original execution this call replayed, waited for or conflicted with (the span's FOLLOWS_FROM link). */
  readonly original: { readonly traceId: string; readonly spanId: string } | null;
  readonly sources: readonly ('jaeger' | 'logs')[];
}

export interface KeyStory {
  readonly calls: readonly KeyCall[];
  /** What could not be read, in words (a backend down, an error answer); the rest is still shown. */
  readonly problems: readonly string[];
}

export interface StoryQuery {
  readonly key: KeyForm;
  readonly tenant: string;
  readonly tool: string;
  /** The earliest time to search from: the run's creation, less a margin. */
  readonly since: Date;
  readonly jaegerUrl: string;
  readonly logsUrl: string;
  /** The trace of the run's own execution (the row's trace id): read directly, so a search limit never hides it. */
  readonly runTraceId?: string | null;
}

/** Bounds on what one `inspect --trace` reads: the services searched and the traces and records per search. */
const MAX_SERVICES = 50;
const MAX_RESULTS = 1000;
const TIMEOUT_MS = 10_000;

interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  startTime: number;
  references?: { refType: string; traceID: string; spanID: string }[];
  tags?: { key: string; value: unknown }[];
}

const trimBase = (url: string) => url.replace(/\/+$/, '');

async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return (await response.json()) as T;
}

/** The key's attribute as telemetry exported it: raw when safe, else its HMAC; undefined when neither is known. */
function keyTag(key: KeyForm): [string, string] | undefined {
  if (key.key !== null) return [ATTR.IDEMPOTENCY_KEY, key.key];
  if (key.keyHash !== null) return [ATTR.IDEMPOTENCY_KEY_HASH, key.keyHash];
  return undefined;
}

const asNumber = (value: unknown): number | null => {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && value !== '' ? Number(value) : NaN;
  return Number.isFinite(n) ? n : null;
};

/** Calls read from one backend, and whether a search hit its limit. */
type Found = KeyCall[] & { truncated: boolean };

async function fromJaeger(query: StoryQuery, tag: [string, string]): Promise<Found> {
  const base = trimBase(query.jaegerUrl);
  const services = ((await getJson<{ data: string[] | null }>(`${base}/api/services`)).data ?? []).slice(
    0,
    MAX_SERVICES,
  );
  const tags = { [tag[0]]: tag[1], [ATTR.TENANT_ID]: query.tenant, [ATTR.GEN_AI_TOOL_NAME]: query.tool };
  const calls: KeyCall[] = [];
  const collect = (trace: { spans: JaegerSpan[] }) => {
    for (const span of trace.spans) {
      const value = (k: string) => span.tags?.find((t) => t.key === k)?.value;
      if (value(tag[0]) !== tag[1] || !span.operationName.startsWith('execute_tool')) continue;
      const link = span.references?.find((r) => r.refType === 'FOLLOWS_FROM');
      const outcome = value(ATTR.OUTCOME);
      calls.push({
        time: new Date(span.startTime / 1000).toISOString(),
        timeMicros: span.startTime,
        outcome: typeof outcome === 'string' ? outcome : null,
        attempt: asNumber(value(ATTR.ATTEMPT)),
        waitedMs: asNumber(value(ATTR.WAITED_MS)),
        traceId: span.traceID,
        spanId: span.spanID,
        original: link ? { traceId: link.traceID, spanId: link.spanID } : null,
        sources: ['jaeger'],
      });
    }
  };
  if (query.runTraceId) {
    const own = await fetch(`${base}/api/traces/${encodeURIComponent(query.runTraceId)}`, {
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    // 404: Jaeger no longer has it (in-memory storage forgets on restart); the search below may still find calls.
    if (own.ok)
      for (const trace of ((await own.json()) as { data: { spans: JaegerSpan[] }[] }).data) collect(trace);
  }
  let truncated = false;
  for (const service of services) {
    const params = new URLSearchParams({
      service,
      tags: JSON.stringify(tags),
      start: String(query.since.getTime() * 1000),
      end: String((Date.now() + 60_000) * 1000),
      limit: String(MAX_RESULTS),
    });
    const traces =
      (await getJson<{ data: { spans: JaegerSpan[] }[] | null }>(`${base}/api/traces?${params}`)).data ?? [];
    if (traces.length >= MAX_RESULTS) truncated = true;
    for (const trace of traces) collect(trace);
  }
  return Object.assign(calls, { truncated });
}

/** A LogsQL string literal. */
const logsql = (text: string) => JSON.stringify(text);

async function fromLogs(query: StoryQuery, tag: [string, string]): Promise<Found> {
  const filter = [
    `_time:>=${query.since.toISOString()}`,
    `${logsql(tag[0])}:=${logsql(tag[1])}`,
    `${logsql(ATTR.TENANT_ID)}:=${logsql(query.tenant)}`,
    `${logsql(ATTR.GEN_AI_TOOL_NAME)}:=${logsql(query.tool)}`,
  ].join(' ');
  const response = await fetch(`${trimBase(query.logsUrl)}/select/logsql/query`, {
    method: 'POST',
    body: new URLSearchParams({ query: filter, limit: String(MAX_RESULTS) }),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const records = (await response.text())
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Record<string, string>);
  const calls: KeyCall[] = records.map((r) => ({
    time: new Date(r._time ?? '').toISOString(),
    timeMicros: microsOf(r._time ?? ''),
    outcome: r[ATTR.OUTCOME] ?? null,
    attempt: asNumber(r[ATTR.ATTEMPT]),
    waitedMs: asNumber(r[ATTR.WAITED_MS]),
    traceId: r.trace_id || null,
    spanId: r.span_id || null,
    original: null,
    sources: ['logs'],
  }));
  return Object.assign(calls, { truncated: records.length >= MAX_RESULTS });
}

/** An RFC 3339 time as VictoriaLogs writes it (nanosecond digits) in microseconds since the epoch */
function microsOf(rfc3339: string): number {
  const ms = Date.parse(rfc3339);
  const subMs = /\.\d{3}(\d{1,3})/.exec(rfc3339)?.[1] ?? '';
  return ms * 1000 + Number(subMs.padEnd(3, '0'));
}

/**
 * Reads every call made with the key from both backends and merges them by span: a call both know is one entry
 * (the span gives the original it followed, the record what Jaeger may have dropped). Oldest first.
 */
export async function keyStory(query: StoryQuery): Promise<KeyStory> {
  const tag = keyTag(query.key);
  if (tag === undefined) {
    return {
      calls: [],
      problems: [
        'this key is exported only as its HMAC, and there is no secret to compute it (set TOOL_LEDGER_KEY_HASH_SECRET)',
      ],
    };
  }
  const problems: string[] = [];
  const settle = async (name: string, url: string, read: () => Promise<Found>): Promise<KeyCall[]> => {
    try {
      const calls = await read();
      if (calls.truncated) {
        problems.push(
          `${name} holds more calls with this key than the ${MAX_RESULTS} read per search: older ones may be missing (the run's own execution is read by its trace id)`,
        );
      }
      return calls;
    } catch (error) {
      problems.push(
        `${name} at ${url} could not be read (${error instanceof Error ? error.message : String(error)}); pass --${name === 'Jaeger' ? 'jaeger-url' : 'logs-url'} if it runs elsewhere`,
      );
      return [];
    }
  };
  const [spans, records] = await Promise.all([
    settle('Jaeger', query.jaegerUrl, () => fromJaeger(query, tag)),
    settle('VictoriaLogs', query.logsUrl, () => fromLogs(query, tag)),
  ]);
  const bySpan = new Map<string, KeyCall>();
  const unmatched: KeyCall[] = [];
  for (const call of spans) {
    if (call.spanId) bySpan.set(call.spanId, call);
    else unmatched.push(call);
  }
  for (const record of records) {
    const span = record.spanId ? bySpan.get(record.spanId) : undefined;
    if (span === undefined) {
      if (record.spanId) bySpan.set(record.spanId, record);
      else unmatched.push(record);
      continue;
    }
    bySpan.set(record.spanId as string, {
      ...span,
      outcome: span.outcome ?? record.outcome,
      attempt: span.attempt ?? record.attempt,
      waitedMs: span.waitedMs ?? record.waitedMs,
      sources: ['jaeger', 'logs'],
    });
  }
  const calls = [...bySpan.values(), ...unmatched].sort((a, b) => a.timeMicros - b.timeMicros);
  return { calls, problems };
}
