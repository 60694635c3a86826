import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { METRIC, PROMETHEUS_METRIC, PROMETHEUS_METRIC_IN_PROCESS } from '../../src/telemetry/vocabulary.js';
import { databaseUrl, uniqueSchema } from '../support/db.js';
import { missing, PROMETHEUS, PROMTOOL } from '../support/requires.js';
import { fillGrafanaPromql, promqlSources, ROOT, RULE_FILES } from './support/configs.js';
import {
  asCollectorNames,
  collectorFamilyName,
  type MetricFamily,
  type PrometheusServer,
  parseExposition,
  type Running,
  startMetricsApp,
  startPrometheus,
} from './support/processes.js';
import { promqlNames } from './support/promql.js';

// Labels Prometheus itself attaches to every scraped series (target labels), plus histogram buckets' `le`.
const TARGET_LABELS = new Set(['job', 'instance']);

const FILE = 'test/ops/promql.test.ts';
const noPromtool = missing(FILE, 'the promtool checks', PROMTOOL);
const noPrometheus = missing(FILE, 'the tests against a real Prometheus', PROMETHEUS);

const sources = promqlSources();
const RANGE = '15s';

let app: Running;
let prometheus: PrometheusServer;
let exported: Map<string, MetricFamily>;
let stack: Map<string, MetricFamily>;
const schema = uniqueSchema('ops_prom');

beforeAll(async () => {
  app = await startMetricsApp(databaseUrl(), schema);
  exported = parseExposition(await (await fetch(`http://127.0.0.1:${app.port}/metrics`)).text());
  stack = asCollectorNames(exported);
  const renames = new Map([...exported].map(([name, family]) => [name, collectorFamilyName(name, family)]));
  if (!noPrometheus) prometheus = await startPrometheus(app.port, RULE_FILES, renames);
}, 90_000);

afterAll(async () => {
  await prometheus?.stop();
  await app?.stop();
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 1 });
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await pool.end();
});

describe('the real export', () => {
  it('has every instrument of the telemetry contract, under the names docs/telemetry.md documents', () => {
    for (const key of Object.keys(METRIC) as (keyof typeof METRIC)[]) {
      expect([...exported.keys()], `${METRIC[key]} in process`).toContain(PROMETHEUS_METRIC_IN_PROCESS[key]);
      expect([...stack.keys()], `${METRIC[key]} exported as ${PROMETHEUS_METRIC[key]}`).toContain(
        PROMETHEUS_METRIC[key],
      );
    }
  });
});

describe('every shipped PromQL expression', () => {
  it.each(sources.map((s) => [s.where, s] as const))('parses: %s', (_where, source) => {
    const expr = fillGrafanaPromql(source.raw, RANGE);
    expect(promqlNames(expr).errors).toEqual([]);
  });

  it.skipIf(noPromtool)('is accepted by promtool (the Prometheus parser itself)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-promtool-'));
    try {
      const file = join(dir, 'all.rules.yml');
      writeFileSync(
        file,
        stringify({
          groups: [
            {
              name: 'shipped',
              rules: sources.map((s, i) => ({
                record: `shipped:expr_${i}`,
                expr: fillGrafanaPromql(s.raw, RANGE),
              })),
            },
          ],
        }),
      );
      execFileSync('promtool', ['check', 'rules', file], { stdio: 'pipe' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(sources.map((s) => [s.where, s] as const))(
    'uses only exported metric and label names: %s',
    (_where, source) => {
      const names = promqlNames(fillGrafanaPromql(source.raw, RANGE));
      const used = new Set<string>(TARGET_LABELS);
      for (const selector of names.selectors) {
        expect(selector.metric, `a selector without a metric name in ${source.raw}`).toBeDefined();
        const series = [...stack.values()].map((f) => f.series.get(selector.metric as string)).find(Boolean);
        expect(
          series,
          `metric ${selector.metric} is not exported (exported: ${[...stack.values()].flatMap((f) => [...f.series.keys()]).join(', ')})`,
        ).toBeDefined();
        for (const label of selector.labels) {
          if (TARGET_LABELS.has(label)) continue;
          expect([...(series as Set<string>)], `label ${label} on ${selector.metric}`).toContain(label);
        }
        for (const label of series as Set<string>) used.add(label);
      }
      for (const label of names.groupingLabels) {
        expect([...used], `grouping label ${label}`).toContain(label);
      }
    },
  );
});

describe.skipIf(noPrometheus)('a real Prometheus scraping real tool calls', () => {
  const dashboardSources = sources.filter((s) => s.where.includes('.json'));

  it('returns data for every dashboard query', async () => {
    // Wait until rates have enough samples inside the range.
    const ready = Date.now() + 40_000;
    const pending = new Map(dashboardSources.map((s) => [s.where, s]));
    const errors: string[] = [];
    while (pending.size > 0 && Date.now() < ready) {
      for (const [where, source] of pending) {
        const response = await prometheus.query(fillGrafanaPromql(source.raw, RANGE));
        if (response.status !== 'success') errors.push(`${where}: ${response.error}`);
        else if ((response.data?.result.length ?? 0) > 0) pending.delete(where);
      }
      if (errors.length > 0) break;
      if (pending.size > 0) await new Promise((r) => setTimeout(r, 1000));
    }
    expect(errors).toEqual([]);
    expect([...pending.keys()], `queries without data; app output:\n${app.output().slice(-2000)}`).toEqual(
      [],
    );
  }, 60_000);

  it('loads and evaluates every alert rule without errors', async () => {
    const body = (await prometheus.get('/api/v1/rules')) as {
      data: { groups: { rules: { name: string; health: string; lastError?: string }[] }[] };
    };
    const rules = body.data.groups.flatMap((g) => g.rules);
    expect(rules.map((r) => r.name).sort()).toEqual([
      'ToolLedgerApprovalWaiting',
      'ToolLedgerConflictSpike',
      'ToolLedgerFailureRateHigh',
      'ToolLedgerInProgressPileup',
      'ToolLedgerStuckRuns',
      'ToolLedgerUnknownOutcome',
    ]);
    for (const rule of rules)
      expect([rule.name, rule.health, rule.lastError ?? '']).toEqual([rule.name, 'ok', '']);
  });
});

describe('alert rules', () => {
  it.skipIf(noPromtool)('pass their promtool unit tests', () => {
    const out = execFileSync('promtool', ['test', 'rules', 'tool-ledger.rules.test.yml'], {
      cwd: join(ROOT, 'prometheus/rules'),
      encoding: 'utf8',
      stdio: 'pipe',
    });
    expect(out).toContain('SUCCESS');
  });
});
