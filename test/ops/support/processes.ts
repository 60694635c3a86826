import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from '../../../bench/support/postgres-cluster.mjs';
import { ROOT } from './configs.js';

// One free-port helper for the tests and the benches alike.
export { freePort };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export interface Running {
  readonly port: number;
  readonly output: () => string;
  stop(): Promise<void>;
}

/** test/ops/fixtures/metrics-app.ts in its own process: real tool calls, metrics on a free port. */
export async function startMetricsApp(databaseUrl: string, schema: string): Promise<Running> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'test/ops/fixtures/metrics-app.ts')], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, LEDGER_SCHEMA: schema, METRICS_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on('data', (d: Buffer) => {
    output += d.toString();
  });
  const deadline = Date.now() + 30_000;
  while (!output.includes('READY')) {
    if (child.exitCode !== null) throw new Error(`metrics app exited early:\n${output}`);
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`metrics app did not get ready:\n${output}`);
    }
    await sleep(50);
  }
  return { port, output: () => output, stop: () => stopChild(child) };
}

export interface MetricFamily {
  type: string;
  unit: string | undefined;
  /** Series names (e.g. `_bucket`, `_sum`, `_count` for histograms) with the label names each carries. */
  series: Map<string, Set<string>>;
}

const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="(?:[^"\\]|\\.)*"/g;

/** Reads a Prometheus text exposition: families with their type, unit, series names and label names. */
export function parseExposition(text: string): Map<string, MetricFamily> {
  const families = new Map<string, MetricFamily>();
  const family = (name: string) => {
    let f = families.get(name);
    if (!f) {
      f = { type: 'untyped', unit: undefined, series: new Map() };
      families.set(name, f);
    }
    return f;
  };
  for (const line of text.split('\n')) {
    const meta = /^# (TYPE|UNIT) (\S+) (\S+)/.exec(line);
    if (meta) {
      const f = family(meta[2] as string);
      if (meta[1] === 'TYPE') f.type = meta[3] as string;
      else f.unit = meta[3];
      continue;
    }
    if (line.startsWith('#') || line.trim() === '') continue;
    const sample = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s/.exec(line);
    if (!sample) continue;
    const name = sample[1] as string;
    const owner =
      [...families.keys()].find(
        (f) => name === f || (name.startsWith(f) && /^_(bucket|sum|count)$/.test(name.slice(f.length))),
      ) ?? name;
    const labels = new Set([...(sample[2] ?? '').matchAll(LABEL)].map((m) => m[1] as string));
    const series = family(owner).series;
    const known = series.get(name) ?? new Set<string>();
    for (const l of labels) known.add(l);
    series.set(name, known);
  }
  return families;
}

/**
 * The name a family takes once it goes through the OpenTelemetry Collector's prometheus exporter (the shipped
 * stack), which appends the unit as the OpenTelemetry-to-Prometheus compatibility rules say;
 * @opentelemetry/exporter-prometheus does not. Derived from the exposition's own `# UNIT` line, so the names
 * stay those of the real export.
 */
const UNIT_SUFFIX: Record<string, string> = { s: 'seconds', ms: 'milliseconds', By: 'bytes', '1': 'ratio' };

export function collectorFamilyName(name: string, family: MetricFamily): string {
  const unit = family.unit?.replace(/\{[^}]*\}/g, '') ?? '';
  if (unit === '') return name;
  const suffix = UNIT_SUFFIX[unit];
  if (!suffix)
    throw new Error(`no Prometheus unit suffix known for unit ${JSON.stringify(family.unit)} of ${name}`);
  if (unit === '1' && family.type !== 'gauge') return name;
  const total = name.endsWith('_total');
  const base = total ? name.slice(0, -'_total'.length) : name;
  if (base.endsWith(`_${suffix}`)) return name;
  return `${base}_${suffix}${total ? '_total' : ''}`;
}

/** The families renamed as the collector would name them, series and labels included. */
export function asCollectorNames(families: Map<string, MetricFamily>): Map<string, MetricFamily> {
  const out = new Map<string, MetricFamily>();
  for (const [name, family] of families) {
    const renamed = collectorFamilyName(name, family);
    const series = new Map<string, Set<string>>();
    for (const [s, labels] of family.series) series.set(renamed + s.slice(name.length), labels);
    out.set(renamed, { ...family, series });
  }
  return out;
}

export interface PrometheusServer {
  readonly url: string;
  query(
    expr: string,
  ): Promise<{ status: string; error?: string; data?: { resultType: string; result: unknown[] } }>;
  get(path: string): Promise<unknown>;
  stop(): Promise<void>;
}

/**
 * A real Prometheus (Debian's package) scraping `targetPort` every second and loading `ruleFiles`. The
 * metric_relabel_configs rename families the way the collector's exporter names them, so the shipped
 * queries run unchanged.
 */
export async function startPrometheus(
  targetPort: number,
  ruleFiles: readonly string[],
  renames: ReadonlyMap<string, string>,
): Promise<PrometheusServer> {
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-prom-'));
  const port = await freePort();
  const relabel = [...renames]
    .filter(([from, to]) => from !== to)
    .map(([from, to]) => ({
      source_labels: ['__name__'],
      regex: `${from}(_bucket|_sum|_count)?`,
      target_label: '__name__',
      replacement: `${to}\${1}`,
    }));
  writeFileSync(
    join(dir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: ruleFiles.map((f) => join(ROOT, f)),
      scrape_configs: [
        {
          job_name: 'tool-ledger-app',
          static_configs: [{ targets: [`127.0.0.1:${targetPort}`] }],
          metric_relabel_configs: relabel,
        },
      ],
    }),
  );
  const child = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--enable-feature=exemplar-storage',
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr?.on('data', (d: Buffer) => {
    log += d.toString();
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited:\n${log}`);
    try {
      if ((await fetch(`${url}/-/ready`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`prometheus did not get ready:\n${log}`);
    await sleep(100);
  }
  return {
    url,
    async query(expr) {
      const response = await fetch(`${url}/api/v1/query`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ query: expr }),
      });
      return (await response.json()) as never;
    },
    async get(path) {
      return (await fetch(`${url}${path}`)).json();
    },
    async stop() {
      await stopChild(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
