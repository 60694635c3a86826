import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../src/telemetry/key-hash.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { CLI_BIN, ensureBuiltCli } from './support/cli-build.js';
import { dashboardTargets, loadDashboard, ROOT, readText, readYaml } from './support/configs.js';
import { type ExplorerAccess, fillExplorerSql, setUpExplorer } from './support/explorer.js';
import {
  BINARIES,
  describeStack,
  getJson,
  missingPrograms,
  type Program,
  type Stack,
  startProgram,
  startStack,
  waitFor,
} from './support/stack.js';

/**
 * `npm run test:stack`: the operations stack's real programs, natively (scripts/stack/build.sh, Debian's
 * prometheus), with the shipped config files. The demo and a caller with a key-derivation bug send telemetry
 * to the collector; every assertion goes through a program's own API. The last test is the incident drill of
 * docs/operations.md, from the conflict-spike alert to the caller, the tenant and the key's trace.
 */

const missing = missingPrograms();
const required = process.env.TOOL_LEDGER_STACK_REQUIRED === '1';
if (missing.length > 0 && !required) {
  console.warn(
    `test/ops/stack.test.ts SKIPPED: the native stack is not built (missing: ${missing.join(', ')}). ` +
      "Run `bash scripts/stack/build.sh` (and install Debian's prometheus), then `npm run test:stack`.",
  );
}

// Prometheus scrapes and evaluates every second here instead of every 15; the rules, their windows and their
// `for` durations are the shipped ones, so the conflict spike takes its full five minutes to fire.
const INTERVAL_SECONDS = 1;
const SECRET = 'stack-test-key-hash-secret';
const ALERT_TIMEOUT_MS = 9 * 60_000;

interface JaegerTag {
  key: string;
  value: unknown;
}
interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  references: { refType: string; traceID: string; spanID: string }[];
  tags: JaegerTag[];
  processID: string;
}
interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string }>;
}

const tag = (span: JaegerSpan, key: string) => span.tags.find((t) => t.key === key)?.value;

let stack: Stack;
let burst: Program;
let burstDone: Promise<void>;
let explorer: ExplorerAccess;
/** How many tool calls the demo made: the rows of its step table (`1 first call …`). */
let demoCalls = 0;
let demoOutput = '';
const schema = uniqueSchema('ops_stack');
const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 });

function runToExit(name: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env } });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not finish in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(output);
      else reject(new Error(`${name} exited with ${code}:\n${output}`));
    });
  });
}

function otelEnv(): NodeJS.ProcessEnv {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: stack.otlpHttpUrl,
    OTEL_METRIC_EXPORT_INTERVAL: '1000',
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_BLRP_SCHEDULE_DELAY: '200',
    TOOL_LEDGER_KEY_HASH_SECRET: SECRET,
  };
}

async function jaegerSearch(service: string, tags: Record<string, string>): Promise<JaegerTrace[]> {
  const params = new URLSearchParams({ service, tags: JSON.stringify(tags), lookback: '1h', limit: '200' });
  return (
    (await getJson<{ data: JaegerTrace[] | null }>(`${stack.jaegerUrl}/api/traces?${params}`)).data ?? []
  );
}

async function promQuery(
  expr: string,
): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const params = new URLSearchParams({ query: expr });
  const body = await getJson<{ status: string; data: { result: never[] } }>(
    `${stack.prometheusUrl}/api/v1/query?${params}`,
  );
  return body.data.result;
}

async function logsQuery(query: string): Promise<Record<string, string>[]> {
  const response = await fetch(`${stack.logsUrl}/select/logsql/query`, {
    method: 'POST',
    body: new URLSearchParams({ query, limit: '1000' }),
    signal: AbortSignal.timeout(10_000),
  });
  if (!response.ok) throw new Error(`LogsQL ${query}: HTTP ${response.status} ${await response.text()}`);
  return (await response.text())
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, string>);
}

const sorted = (counts: Record<string, number>) =>
  Object.entries(counts).sort(([a], [b]) => a.localeCompare(b));

/** Every call of the demo, as its execute_tool span in Jaeger, once all its traces have arrived. */
async function demoCallsInJaeger(): Promise<{ spans: JaegerSpan[]; byOutcome: Record<string, number> }> {
  // The demo has exited and flushed before the tests run; the collector's batches may still be arriving, so the
  // answer counts once Jaeger has a span for every call the demo printed, and two polls in a row agree (two polls
  // alone once agreed on a batch that had not all arrived).
  expect(demoCalls, 'the demo printed no step table').toBeGreaterThan(0);
  let previous = -1;
  const spans = await waitFor(
    "the demo's calls in Jaeger",
    async () => {
      const params = new URLSearchParams({ service: 'tool-ledger-demo', lookback: '1h', limit: '1000' });
      const traces = (
        await getJson<{ data: JaegerTrace[] | null }>(`${stack.jaegerUrl}/api/traces?${params}`)
      ).data;
      const calls = (traces ?? [])
        .flatMap((t) => t.spans)
        .filter((x) => tag(x, 'tool_ledger.idempotency.outcome'));
      const settled = calls.length >= demoCalls && calls.length === previous;
      previous = calls.length;
      return settled ? calls : undefined;
    },
    60_000,
    1000,
  );
  const byOutcome: Record<string, number> = {};
  for (const span of spans) {
    const outcome = String(tag(span, 'tool_ledger.idempotency.outcome'));
    byOutcome[outcome] = (byOutcome[outcome] ?? 0) + 1;
  }
  return { spans, byOutcome };
}

describe.skipIf(missing.length > 0 && !required)('the operations stack, running natively', () => {
  beforeAll(async () => {
    expect(missing, 'TOOL_LEDGER_STACK_REQUIRED=1 but the native stack is not built').toEqual([]);
    stack = await startStack(INTERVAL_SECONDS);
    explorer = await setUpExplorer(admin, databaseUrl(), schema, SECRET);
    // Started first: the conflict spike needs five minutes of conflicts before it fires.
    burst = startProgram(
      'conflict-burst',
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'test/ops/fixtures/conflict-burst.ts')],
      {
        ...otelEnv(),
        DATABASE_URL: databaseUrl(),
        LEDGER_SCHEMA: schema,
        BURST_SECONDS: String(ALERT_TIMEOUT_MS / 1000),
        CONFLICT_EVERY_MS: '250',
      },
    );
    burstDone = waitFor(
      'the conflict burst to start',
      async () => (burst.output().includes('READY') ? true : undefined),
      60_000,
    ).then(() => undefined);
    await burstDone;
    // The demo on its embedded ledger: with DATABASE_URL it would write to the test database's default schema.
    const demo = await runToExit(
      'npm run demo',
      ['--import', 'tsx', 'examples/demo/main.ts'],
      { ...otelEnv(), DATABASE_URL: '' },
      120_000,
    );
    demoOutput = demo;
    demoCalls = demo.split('\n').filter((line) => /^\d+ \S/.test(line)).length;
  }, 240_000);

  afterAll(async () => {
    await burst?.stop();
    await stack?.stop();
    await explorer?.drop();
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }, 60_000);

  it('otelcol validate accepts the shipped collector config, and rejects a broken one', () => {
    execFileSync(BINARIES.otelcol, ['validate', `--config=${join(ROOT, 'collector/otel-collector.yaml')}`], {
      stdio: 'pipe',
    });
    execFileSync(BINARIES.otelcol, ['validate', `--config=${stack.collectorConfig}`], { stdio: 'pipe' });
    const broken = join(stack.dir, 'broken.yaml');
    writeFileSync(
      broken,
      readText('collector/otel-collector.yaml').replace('allow_all_keys: false', 'allow_all_keyz: false'),
    );
    expect(() =>
      execFileSync(BINARIES.otelcol, ['validate', `--config=${broken}`], { stdio: 'pipe' }),
    ).toThrow();
  });

  it("Jaeger finds the demo's call by its key, and the replay's link comes back as a reference to the original", async () => {
    const traces = await waitFor(
      'the demo key inv-req-1 in Jaeger',
      async () => {
        const found = await jaegerSearch('tool-ledger-demo', { 'tool_ledger.idempotency.key': 'inv-req-1' });
        const outcomes = found.flatMap((t) => t.spans.map((s) => tag(s, 'tool_ledger.idempotency.outcome')));
        return outcomes.includes('executed') && outcomes.includes('replayed') && outcomes.includes('conflict')
          ? found
          : undefined;
      },
      60_000,
    );
    const spans = traces
      .flatMap((t) => t.spans)
      .filter((s) => tag(s, 'tool_ledger.idempotency.key') === 'inv-req-1');
    const executed = spans.find(
      (s) => tag(s, 'tool_ledger.idempotency.outcome') === 'executed',
    ) as JaegerSpan;
    expect(executed.operationName).toBe('execute_tool create_invoice');
    for (const outcome of ['replayed', 'conflict']) {
      const span = spans.find((s) => tag(s, 'tool_ledger.idempotency.outcome') === outcome) as JaegerSpan;
      expect(span.traceID, outcome).not.toBe(executed.traceID);
      expect(span.references, outcome).toContainEqual({
        refType: 'FOLLOWS_FROM',
        traceID: executed.traceID,
        spanID: executed.spanID,
      });
    }
  });

  it('Prometheus, scraping the collector, has the call counters by outcome, as many as Jaeger has calls', async () => {
    const { byOutcome: inJaeger } = await demoCallsInJaeger();
    expect(Object.keys(inJaeger)).toEqual(
      expect.arrayContaining(['executed', 'replayed', 'conflict', 'rejected']),
    );
    const inPrometheus = await waitFor(
      "the demo's call counters in Prometheus",
      async () => {
        const result = await promQuery(
          'sum by (tool_ledger_idempotency_outcome) (tool_ledger_tool_calls_total{job="tool-ledger-demo"})',
        );
        const counts = Object.fromEntries(
          result.map((r) => [r.metric.tool_ledger_idempotency_outcome, Number(r.value[1])]),
        );
        return JSON.stringify(sorted(counts)) === JSON.stringify(sorted(inJaeger)) ? counts : undefined;
      },
      60_000,
    );
    expect(sorted(inPrometheus)).toEqual(sorted(inJaeger));
    const up = await promQuery('up{job="otel-collector"}');
    expect(up.map((r) => r.value[1])).toEqual(['1']);
  });

  it('Prometheus runs without lifecycle endpoints', async () => {
    const reload = await fetch(`${stack.prometheusUrl}/-/reload`, { method: 'POST' });
    expect(reload.status).toBe(403);
    const quit = await fetch(`${stack.prometheusUrl}/-/quit`, { method: 'POST' });
    expect(quit.status).toBe(403);
  });

  it("VictoriaLogs has one decision record per call, each with the trace and span id of the call's span in Jaeger", async () => {
    const { spans, byOutcome } = await demoCallsInJaeger();
    const records = await waitFor(
      "the demo's decision records in VictoriaLogs",
      async () => {
        const found = await logsQuery('_time:1h service.name:"tool-ledger-demo"');
        return found.length >= spans.length ? found : undefined;
      },
      60_000,
    );
    expect(records).toHaveLength(spans.length);
    const counts: Record<string, number> = {};
    for (const record of records) {
      const outcome = record['tool_ledger.idempotency.outcome'] as string;
      counts[outcome] = (counts[outcome] ?? 0) + 1;
      expect(record.event_name).toBe('tool_ledger.decision');
      const span = spans.find((x) => x.traceID === record.trace_id && x.spanID === record.span_id);
      expect(span, `span ${record.span_id} of trace ${record.trace_id} in Jaeger`).toBeDefined();
      expect(tag(span as JaegerSpan, 'tool_ledger.idempotency.outcome')).toBe(outcome);
      expect(tag(span as JaegerSpan, 'tool_ledger.idempotency.key')).toBe(
        record['tool_ledger.idempotency.key'],
      );
    }
    expect(sorted(counts)).toEqual(sorted(byOutcome));
    // The log panel of the tool-calls dashboard, run as written.
    const panel = dashboardTargets('tool-calls.json').find(
      (t) => t.datasourceType === 'victoriametrics-logs-datasource',
    );
    const shown = await logsQuery(`_time:1h ${String(panel?.target.expr)}`);
    expect(shown.map((r) => r['tool_ledger.idempotency.outcome'])).toContain('conflict');
    expect(
      shown.every((r) =>
        ['conflict', 'failed', 'in_progress'].includes(r['tool_ledger.idempotency.outcome'] ?? ''),
      ),
    ).toBe(true);
  });

  it('the collector masks an email on a hand-made span and keeps the contract attributes', async () => {
    const traceId = '5b8efff798038103d269b633813fc60c';
    const email = 'maria.rossi@example.org';
    const contract = {
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'create_invoice',
      'tool_ledger.tenant.id': 'acme',
      'tool_ledger.idempotency.key': 'order-1042',
      'tool_ledger.idempotency.outcome': 'executed',
      'tool_ledger.idempotency.attempt': 1,
    };
    const attribute = (key: string, value: string | number) => ({
      key,
      value: typeof value === 'number' ? { intValue: value } : { stringValue: value },
    });
    const now = BigInt(Date.now()) * 1_000_000n;
    const response = await fetch(`${stack.otlpHttpUrl}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        resourceSpans: [
          {
            resource: { attributes: [attribute('service.name', 'hand-made-probe')] },
            scopeSpans: [
              {
                scope: { name: 'not-tool-ledger' },
                spans: [
                  {
                    traceId,
                    spanId: '1a2b3c4d5e6f7a8b',
                    name: 'execute_tool create_invoice',
                    kind: 1,
                    startTimeUnixNano: String(now - 5_000_000n),
                    endTimeUnixNano: String(now),
                    attributes: [
                      ...Object.entries(contract).map(([k, v]) => attribute(k, v)),
                      attribute('exception.message', `could not notify ${email}`),
                      attribute('enduser.email', email),
                    ],
                  },
                ],
              },
            ],
          },
        ],
      }),
    });
    expect(response.status).toBe(200);
    const trace = await waitFor(
      'the hand-made span in Jaeger',
      async () =>
        (await getJson<{ data: JaegerTrace[] }>(`${stack.jaegerUrl}/api/traces/${traceId}`)).data[0],
      30_000,
    );
    expect(JSON.stringify(trace)).not.toContain(email);
    const span = trace.spans[0] as JaegerSpan;
    for (const [key, value] of Object.entries(contract)) expect(tag(span, key), key).toBe(value);
    expect(String(tag(span, 'exception.message'))).toContain('could not notify');
    expect(tag(span, 'enduser.email')).toBeUndefined();
  });

  it('the demo ends with a trace id Jaeger has and the inspect command for its key', async () => {
    const trace = /trace id of its original execution: ([0-9a-f]{32})/.exec(demoOutput)?.[1];
    expect(trace, demoOutput).toBeDefined();
    expect(demoOutput).toContain(
      'npx tool-ledger inspect --tenant acme --tool create_invoice --key inv-req-1',
    );
    const found = await waitFor(
      `trace ${trace} in Jaeger`,
      async () => {
        const response = await fetch(`${stack.jaegerUrl}/api/traces/${trace}`);
        return response.ok ? ((await response.json()) as { data: JaegerTrace[] }) : undefined;
      },
      30_000,
    );
    const span = found.data[0]?.spans.find((s) => s.operationName === 'execute_tool create_invoice');
    expect(span && tag(span, 'tool_ledger.idempotency.key')).toBe('inv-req-1');
  });

  it('inspect --trace tells the story of a key: every call, from Jaeger and VictoriaLogs, as a timeline or JSON', async () => {
    ensureBuiltCli();
    const inspect = (key: string, json: boolean) =>
      execFileSync(
        process.execPath,
        [
          CLI_BIN,
          'inspect',
          '--schema',
          schema,
          '--tenant',
          'globex',
          '--tool',
          'create_invoice',
          '--key',
          key,
          '--trace',
          '--jaeger-url',
          stack.jaegerUrl,
          '--logs-url',
          stack.logsUrl,
          ...(json ? ['--json'] : []),
        ],
        {
          env: { ...process.env, DATABASE_URL: databaseUrl(), TOOL_LEDGER_KEY_HASH_SECRET: SECRET },
          encoding: 'utf8',
        },
      );
    interface Call {
      time: string;
      outcome: string;
      attempt: number;
      traceId: string;
      spanId: string;
      original: { traceId: string; spanId: string } | null;
      sources: string[];
    }
    // The burst's conflicts keep arriving; wait until both backends have several (bounded).
    const run = await waitFor(
      'the burst-1 conflicts in Jaeger and VictoriaLogs',
      async () => {
        const data = JSON.parse(inspect('burst-1', true)) as {
          traceId: string;
          spanId: string;
          calls: Call[];
        };
        return data.calls.filter((c) => c.outcome === 'conflict' && c.sources.length === 2).length >= 3
          ? data
          : undefined;
      },
      60_000,
      1000,
    );
    const [first, ...rest] = run.calls;
    // The run's own execution first, then the conflicts, each following that execution.
    expect(first).toMatchObject({
      outcome: 'executed',
      attempt: 1,
      traceId: run.traceId,
      spanId: run.spanId,
    });
    expect(first?.sources).toEqual(['jaeger', 'logs']);
    for (const call of rest.filter((c) => c.sources.includes('jaeger'))) {
      expect(call.outcome).toBe('conflict');
      expect(call.original).toEqual({ traceId: run.traceId, spanId: run.spanId });
    }
    const times = run.calls.map((c) => c.time);
    expect([...times].sort()).toEqual(times);

    const text = inspect('burst-1', false);
    expect(text).toMatch(/calls with this key, oldest first \(Jaeger .*, VictoriaLogs .*\): \d+/);
    expect(text).toMatch(/TIME +OUTCOME +ATTEMPT +WAITED +TRACE +ORIGINAL +FROM/);
    expect(text).toMatch(new RegExp(`executed +1 +- +${run.traceId} +- +jaeger\\+logs`));
    expect(text).toMatch(
      new RegExp(`conflict +1 +\\S+ +[0-9a-f]{32} +${run.traceId}/${run.spanId} +jaeger\\+logs`),
    );

    // A key exported only as its HMAC is found by that HMAC.
    const personal = JSON.parse(inspect('maria@example.com', true)) as { calls: Call[]; traceId: string };
    expect(personal.calls).toEqual([
      expect.objectContaining({ outcome: 'executed', traceId: personal.traceId }),
    ]);
  });

  it('every address npm run stack prints answers on this stack, and it says the Jaeger UI is a placeholder', async () => {
    const text = await describeStack(stack);
    const urls = [...text.matchAll(/https?:\/\/[^\s)]+/g)]
      .map((m) => m[0])
      .filter((u) => !u.includes('<') && u !== stack.otlpHttpUrl && u !== stack.jaegerUrl);
    expect(urls.length).toBeGreaterThanOrEqual(5);
    for (const url of urls) {
      const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
      await response.arrayBuffer();
      expect(response.status, url).toBe(200);
    }
    const root = await (await fetch(`${stack.jaegerUrl}/`)).text();
    expect(root).toContain('This is not the Jaeger UI you are looking for');
    expect(text).toContain('This is not the');
  });

  it(
    'incident drill: the conflict-spike alert fires, and leads to the tool, the caller, the tenant and the trace',
    async () => {
      // 1. The alert, as Prometheus shows it at /alerts, with its runbook link.
      const alert = await waitFor(
        'ToolLedgerConflictSpike to fire',
        async () => {
          const body = await getJson<{
            data: {
              alerts: {
                labels: Record<string, string>;
                annotations: Record<string, string>;
                state: string;
              }[];
            };
          }>(`${stack.prometheusUrl}/api/v1/alerts`);
          return body.data.alerts.find(
            (a) => a.labels.alertname === 'ToolLedgerConflictSpike' && a.state === 'firing',
          );
        },
        ALERT_TIMEOUT_MS,
        2000,
      );
      expect(alert.labels.gen_ai_tool_name).toBe('create_invoice');
      // Absolute, from the one base prometheus.yml sets.
      expect(alert.annotations.runbook_url).toBe(
        `${readYaml<{ global: { external_labels: { runbook_base: string } } }>('prometheus/prometheus.yml').global.external_labels.runbook_base}#toolledgerconflictspike`,
      );
      expect(readText('docs/operations.md')).toContain('### ToolLedgerConflictSpike');
      const tool = alert.labels.gen_ai_tool_name as string;

      // 2. The offending caller: which service sends the conflicting calls.
      const callers = await promQuery(
        `sum by (job, instance) (rate(tool_ledger_tool_calls_total{tool_ledger_idempotency_outcome="conflict", gen_ai_tool_name="${tool}"}[5m])) > 0.1`,
      );
      expect(callers.map((c) => c.metric.job)).toEqual(['billing-agent']);

      // 3. The tenant and the key: the ledger explorer's "Recent conflicts", as Grafana's read-only role.
      const recent = dashboardTargets('ledger-explorer.json').find((t) => t.panel === 'Recent conflicts');
      const now = new Date();
      const rows = (
        await explorer.readerPool.query(
          // The burst still runs, so the range ends a minute ahead: its newest conflict may be later than `now`.
          fillExplorerSql(
            String(recent?.target.rawSql),
            { tool },
            new Date(now.getTime() - 3600_000),
            new Date(now.getTime() + 60_000),
          ),
        )
      ).rows as Record<string, unknown>[];
      expect(rows[0]).toMatchObject({ tenant_id: 'globex', tool_name: tool, idempotency_key: 'burst-1' });
      expect(Number(rows[0]?.conflict_count)).toBeGreaterThan(100);
      const traceId = String(rows[0]?.trace_id);

      // 4. The key's trace in Jaeger: the original execution, and the conflicting calls linking to it.
      const original = await getJson<{ data: JaegerTrace[] }>(`${stack.jaegerUrl}/api/traces/${traceId}`);
      const executed = original.data[0]?.spans.find(
        (s) => tag(s, 'tool_ledger.idempotency.outcome') === 'executed',
      ) as JaegerSpan;
      expect(tag(executed, 'tool_ledger.idempotency.key')).toBe('burst-1');
      expect(tag(executed, 'tool_ledger.tenant.id')).toBe('globex');
      expect(original.data[0]?.processes[executed.processID]?.serviceName).toBe('billing-agent');
      const conflicts = (
        await jaegerSearch('billing-agent', {
          'tool_ledger.idempotency.key': 'burst-1',
          'tool_ledger.idempotency.outcome': 'conflict',
        })
      ).flatMap((t) => t.spans);
      expect(conflicts.length).toBeGreaterThan(0);
      for (const span of conflicts.slice(0, 20)) {
        expect(tag(span, 'tool_ledger.conflict.reason')).toBe('params_mismatch');
        expect(span.references).toContainEqual({
          refType: 'FOLLOWS_FROM',
          traceID: traceId,
          spanID: executed.spanID,
        });
      }

      // A key that may hold personal data: the explorer and Jaeger both carry only its HMAC, and they agree.
      const hash = hashKey('maria@example.com', SECRET);
      const hashed = (
        await explorer.readerPool.query(
          fillExplorerSql(
            String(
              dashboardTargets('ledger-explorer.json').find(
                (t) => t.panel === 'Runs matching tenant / tool / key',
              )?.target.rawSql,
            ),
            { key: hash },
            new Date(now.getTime() - 3600_000),
            now,
          ),
        )
      ).rows as Record<string, unknown>[];
      expect(hashed).toHaveLength(1);
      expect(hashed[0]?.idempotency_key).toBeNull();
      const byHash = await jaegerSearch('billing-agent', { 'tool_ledger.idempotency.key_hash': hash });
      expect(byHash.map((t) => t.traceID)).toEqual([hashed[0]?.trace_id]);
      expect(JSON.stringify(byHash)).not.toContain('maria@example.com');
      expect(loadDashboard('ledger-explorer.json').uid).toBe('tool-ledger-explorer');
    },
    ALERT_TIMEOUT_MS + 60_000,
  );
});
