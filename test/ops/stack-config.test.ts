import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ATTR } from '../../src/telemetry/vocabulary.js';
import {
  corpus,
  EMPTY_CORPUS,
  type PiiCorpus,
  SHARED_CORPUS_SUITE,
  sharedCorpus,
} from '../support/pii-corpus.js';
import {
  alertRules,
  DASHBOARD_FILES,
  dashboardTargets,
  loadDashboard,
  ROOT,
  readText,
  readYaml,
} from './support/configs.js';

interface Service {
  image: string;
  command?: string[] | string;
  ports?: string[];
  volumes?: string[];
  depends_on?: string[];
  environment?: Record<string, string>;
}
const compose = readYaml<{ services: Record<string, Service>; volumes?: Record<string, unknown> }>(
  'docker-compose.yml',
);
const services = compose.services;

// What each image listens on inside the compose network (facts about the pinned images).
const IMAGE_PORTS: Record<string, number[]> = {
  postgres: [5432],
  jaeger: [4317, 4318, 16686],
  prometheus: [9090],
  loki: [3100],
  grafana: [3000],
};

interface Collector {
  receivers: Record<string, { protocols: Record<string, { endpoint: string }> }>;
  processors: Record<string, Record<string, unknown>>;
  exporters: Record<string, { endpoint?: string; enable_open_metrics?: boolean }>;
  extensions?: Record<string, { endpoint?: string }>;
  service: {
    extensions?: string[];
    pipelines: Record<string, { receivers: string[]; processors: string[]; exporters: string[] }>;
  };
}
const collector = readYaml<Collector>('collector/otel-collector.yaml');

function containerPorts(service: string): number[] {
  if (service === 'otel-collector') {
    const endpoints = [
      ...Object.values(collector.receivers).flatMap((r) => Object.values(r.protocols).map((p) => p.endpoint)),
      ...Object.values(collector.exporters).flatMap((e) =>
        e.endpoint?.startsWith('0.0.0.0:') ? [e.endpoint] : [],
      ),
      ...Object.values(collector.extensions ?? {}).flatMap((e) => (e.endpoint ? [e.endpoint] : [])),
    ];
    return endpoints.map((e) => Number(e.split(':').at(-1)));
  }
  return IMAGE_PORTS[service] ?? [];
}

/** `host:port` or `scheme://host:port/...` must name a compose service and a port it listens on. */
function expectServiceAddress(address: string, what: string): void {
  const match = /^(?:[a-z]+:\/\/)?([a-z0-9-]+):(\d+)/.exec(address);
  expect(match, `${what}: ${address}`).not.toBeNull();
  const [, host, port] = match as RegExpExecArray;
  expect(Object.keys(services), `${what}: host ${host}`).toContain(host);
  expect(containerPorts(host as string), `${what}: ${host} does not listen on ${port}`).toContain(
    Number(port),
  );
}

function mounts(service: string): { source: string; target: string }[] {
  return (services[service]?.volumes ?? []).map((v) => {
    const [source, target] = v.split(':') as [string, string];
    return { source, target };
  });
}

describe('docker-compose.yml', () => {
  it('is valid according to docker-compose (Compose specification), which rejects a broken file', () => {
    execFileSync('docker-compose', ['-f', join(ROOT, 'docker-compose.yml'), 'config', '-q'], {
      stdio: 'pipe',
    });
    const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-compose-'));
    try {
      writeFileSync(
        join(dir, 'docker-compose.yml'),
        'services:\n  x:\n    image: busybox:1\n    portz: ["1:1"]\n',
      );
      const bad = spawnSync('docker-compose', ['-f', join(dir, 'docker-compose.yml'), 'config', '-q'], {
        encoding: 'utf8',
      });
      expect(bad.status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has the whole stack, every image pinned, Jaeger v2 and the collector contrib image', () => {
    expect(Object.keys(services).sort()).toEqual([
      'grafana',
      'jaeger',
      'loki',
      'otel-collector',
      'postgres',
      'prometheus',
    ]);
    for (const [name, service] of Object.entries(services)) {
      expect(service.image, name).toMatch(/^[a-z0-9./-]+:v?\d+(\.\d+)+$/);
    }
    expect(services.jaeger?.image).toMatch(/^jaegertracing\/jaeger:2\./);
    expect(services['otel-collector']?.image).toMatch(/^otel\/opentelemetry-collector-contrib:/);
  });

  it('mounts only files that exist, and names only defined services and volumes', () => {
    for (const name of Object.keys(services)) {
      for (const { source } of mounts(name)) {
        if (source.startsWith('.'))
          expect(existsSync(join(ROOT, source)), `${name} mounts ${source}`).toBe(true);
        else expect(Object.keys(compose.volumes ?? {}), `${name} volume ${source}`).toContain(source);
      }
      for (const dep of services[name]?.depends_on ?? []) expect(Object.keys(services)).toContain(dep);
    }
  });

  it('publishes OTLP 4317/4318, the Jaeger UI, Grafana and Prometheus on the ports the docs use', () => {
    const published = (name: string) => (services[name]?.ports ?? []).map((p) => p.split(':').at(-1));
    expect(published('otel-collector')).toEqual(expect.arrayContaining(['4317', '4318']));
    expect(published('jaeger')).toContain('16686');
    expect(published('grafana')).toContain('3000');
    expect(published('prometheus')).toContain('9090');
    for (const name of Object.keys(services)) {
      for (const port of published(name))
        expect(containerPorts(name), `${name} publishes ${port}`).toContain(Number(port));
    }
  });
});

describe('collector/otel-collector.yaml', () => {
  const pipelines = collector.service.pipelines;

  it('is mounted where the collector reads its config', () => {
    const mount = mounts('otel-collector').find((m) => m.source === './collector/otel-collector.yaml');
    expect(mount).toBeDefined();
    expect(String(services['otel-collector']?.command)).toContain(`--config=${mount?.target}`);
  });

  it('has traces, metrics and logs pipelines with memory_limiter first, redaction and batch', () => {
    expect(Object.keys(pipelines).sort()).toEqual(['logs', 'metrics', 'traces']);
    for (const [name, p] of Object.entries(pipelines)) {
      expect(p.processors[0], name).toBe('memory_limiter');
      expect(
        p.processors.some((x) => x.split('/')[0] === 'redaction'),
        name,
      ).toBe(true);
      expect(p.processors.at(-1), name).toBe('batch');
    }
  });

  it('defines every component a pipeline uses, and uses every component it defines', () => {
    const used = {
      receivers: new Set<string>(),
      processors: new Set<string>(),
      exporters: new Set<string>(),
    };
    for (const p of Object.values(pipelines)) {
      for (const kind of ['receivers', 'processors', 'exporters'] as const)
        for (const c of p[kind]) used[kind].add(c);
    }
    for (const kind of ['receivers', 'processors', 'exporters'] as const) {
      expect([...used[kind]].sort(), kind).toEqual(Object.keys(collector[kind]).sort());
    }
    expect(collector.service.extensions?.sort()).toEqual(Object.keys(collector.extensions ?? {}).sort());
  });

  it('receives OTLP on gRPC 4317 and HTTP 4318 and sends traces to Jaeger, metrics to Prometheus, logs to Loki', () => {
    expect(collector.receivers.otlp?.protocols.grpc?.endpoint).toBe('0.0.0.0:4317');
    expect(collector.receivers.otlp?.protocols.http?.endpoint).toBe('0.0.0.0:4318');
    const exporterOf = (pipeline: string) => pipelines[pipeline]?.exporters ?? [];
    expect(exporterOf('traces')).toEqual(['otlp/jaeger']);
    expectServiceAddress(String(collector.exporters['otlp/jaeger']?.endpoint), 'otlp/jaeger');
    expect(exporterOf('metrics')).toEqual(['prometheus']);
    expect(collector.exporters.prometheus?.enable_open_metrics).toBe(true);
    expect(exporterOf('logs')).toEqual(['otlphttp/loki']);
    const loki = String(collector.exporters['otlphttp/loki']?.endpoint);
    expect(loki).toMatch(/\/otlp$/);
    expectServiceAddress(loki, 'otlphttp/loki');
  });

  const redactions = Object.entries(collector.processors).filter(
    ([name]) => name.split('/')[0] === 'redaction',
  );

  it('redaction keeps every attribute of the telemetry contract and the resource attributes', () => {
    expect(redactions.length).toBeGreaterThan(0);
    for (const [name, config] of redactions) {
      expect(config.allow_all_keys, name).toBe(false);
      const kept = [...(config.allowed_keys as string[]), ...((config.ignored_keys as string[]) ?? [])];
      expect(kept, name).toEqual(
        expect.arrayContaining([...Object.values(ATTR), 'service.name', 'service.instance.id']),
      );
    }
  });

  // Go's RE2 and JavaScript agree on the syntax these patterns use (classes, groups, \b, \d, counted repeats).
  const patterns = ((redactions[0]?.[1].blocked_values ?? []) as string[]).map((p) => new RegExp(p, 'g'));
  const mask = (text: string) => patterns.reduce((t, p) => t.replace(p, '****'), text);
  const maskSuite = (corpus: PiiCorpus) => {
    it.each(
      corpus.values
        .filter((v) => ['email', 'phone', 'credit_card', 'ssn'].includes(v.category))
        .map((v) => [v.category, v.value]),
    )('redaction masks %s %s', (_category, value) => {
      expect(mask(`value ${value} here`)).not.toContain(value);
    });

    it('redaction masks personal data inside free text', () => {
      for (const text of corpus.free_text_examples) {
        for (const v of corpus.values.filter((x) => ['email', 'phone', 'credit_card'].includes(x.category))) {
          if (text.includes(v.value)) expect(mask(text)).not.toContain(v.value);
        }
      }
    });
  };
  describe('in-repo corpus', () => maskSuite(corpus));
  describe.skipIf(sharedCorpus === undefined)(SHARED_CORPUS_SUITE, () =>
    maskSuite(sharedCorpus ?? EMPTY_CORPUS),
  );

  it.each([
    ['trace id', '4bf92f3577b34da6a3ce929d0e0e4736'],
    ['span id', '00f067aa0ba902b7'],
    ['uuid', '123e4567-e89b-12d3-a456-426614174000'],
    ['invoice id', 'inv_2024_0042'],
    ['order key', 'order-1042'],
    ['timestamp', '2026-11-30T00:14:01.123Z'],
    ['date', '2026-11-30'],
    ['version', 'v1.2.3'],
    ['tool name', 'create_invoice'],
    ['duration', '1234.5 ms'],
  ])('redaction leaves a %s alone', (_what, value) => {
    expect(mask(value)).toBe(value);
  });
});

describe('prometheus/', () => {
  const config = readYaml<{
    rule_files: string[];
    scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
  }>('prometheus/prometheus.yml');

  it('passes promtool check config', () => {
    execFileSync('promtool', ['check', 'config', join(ROOT, 'prometheus/prometheus.yml')], { stdio: 'pipe' });
  });

  it('loads the rule files from where compose mounts them', () => {
    const rulesMount = mounts('prometheus').find((m) => m.source === './prometheus/rules');
    expect(rulesMount).toBeDefined();
    const configMount = mounts('prometheus').find((m) => m.source === './prometheus/prometheus.yml');
    expect(String(services.prometheus?.command)).toContain(`--config.file=${configMount?.target}`);
    for (const glob of config.rule_files) {
      expect(posix.dirname(glob)).toBe(rulesMount?.target);
      const pattern = new RegExp(`^${posix.basename(glob).replaceAll('.', '\\.').replaceAll('*', '.*')}$`);
      expect(pattern.test('tool-ledger.rules.yml'), glob).toBe(true);
      expect(pattern.test('tool-ledger.rules.test.yml'), `${glob} must not load the test file`).toBe(false);
    }
  });

  it('scrapes the collector on its prometheus exporter port', () => {
    const targets = config.scrape_configs.flatMap((s) => s.static_configs.flatMap((c) => c.targets));
    const collectorTarget = targets.find((t) => t.startsWith('otel-collector:'));
    expect(collectorTarget).toBe(
      `otel-collector:${String(collector.exporters.prometheus?.endpoint).split(':').at(-1)}`,
    );
    expectServiceAddress(collectorTarget as string, 'scrape target');
  });

  it('runs with exemplar storage, so exemplar links reach Grafana', () => {
    expect(services.prometheus?.command).toContain('--enable-feature=exemplar-storage');
  });
});

describe('alert runbooks', () => {
  const docs = readText('docs/operations.md');
  // GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes.
  const anchors = new Set(
    [...docs.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) =>
      (m[1] as string)
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );

  it.each(alertRules().map((r) => [r.alert as string, r] as const))(
    '%s links to its runbook',
    (_name, rule) => {
      const url = rule.annotations?.runbook_url ?? '';
      const [path, anchor] = url.split('#');
      expect(path).toBe('docs/operations.md');
      expect([...anchors]).toContain(anchor);
      expect(anchor).toBe(rule.alert?.toLowerCase());
    },
  );
});

describe('Grafana provisioning', () => {
  interface Datasource {
    uid: string;
    type: string;
    url: string;
    user?: string;
    jsonData?: Record<string, unknown>;
    secureJsonData?: Record<string, string>;
  }
  const datasources = readYaml<{ datasources: Datasource[] }>(
    'dashboards/provisioning/datasources/tool-ledger.yaml',
  ).datasources;
  const uids = new Map(datasources.map((d) => [d.uid, d]));
  const provider = readYaml<{ providers: { options: { path: string } }[] }>(
    'dashboards/provisioning/dashboards/tool-ledger.yaml',
  ).providers[0];

  it('provisions Prometheus, Jaeger, Loki and PostgreSQL, each pointing at a compose service', () => {
    expect(datasources.map((d) => d.type).sort()).toEqual([
      'grafana-postgresql-datasource',
      'jaeger',
      'loki',
      'prometheus',
    ]);
    for (const d of datasources) expectServiceAddress(d.url, `datasource ${d.uid}`);
    const pgSource = datasources.find((d) => d.type === 'grafana-postgresql-datasource');
    const env = services.postgres?.environment ?? {};
    expect(pgSource?.jsonData?.database).toBe(env.POSTGRES_DB);
    expect(pgSource?.user).toBe(env.POSTGRES_USER);
    expect(pgSource?.secureJsonData?.password).toBe(env.POSTGRES_PASSWORD);
  });

  it('links exemplars, log trace ids and traces-to-logs to datasources that exist', () => {
    const prom = uids.get('prometheus')?.jsonData as {
      exemplarTraceIdDestinations: { datasourceUid: string }[];
    };
    for (const d of prom.exemplarTraceIdDestinations) expect(uids.get(d.datasourceUid)?.type).toBe('jaeger');
    const loki = uids.get('loki')?.jsonData as { derivedFields: { datasourceUid: string }[] };
    for (const d of loki.derivedFields) expect(uids.get(d.datasourceUid)?.type).toBe('jaeger');
    const jaeger = uids.get('jaeger')?.jsonData as { tracesToLogsV2: { datasourceUid: string } };
    expect(uids.get(jaeger.tracesToLogsV2.datasourceUid)?.type).toBe('loki');
  });

  it('mounts the provisioning folder and every dashboard where the provider reads them', () => {
    const grafanaMounts = mounts('grafana');
    expect(grafanaMounts.find((m) => m.source === './dashboards/provisioning')?.target).toBe(
      '/etc/grafana/provisioning',
    );
    for (const file of DASHBOARD_FILES) {
      const mount = grafanaMounts.find((m) => m.source === `./dashboards/${file}`);
      expect(mount, file).toBeDefined();
      expect(posix.dirname(mount?.target ?? '')).toBe(provider?.options.path);
    }
  });

  it.each(DASHBOARD_FILES)(
    '%s uses only provisioned datasources and links to dashboards that exist',
    (file) => {
      for (const t of dashboardTargets(file)) {
        expect(uids.get(t.datasourceUid)?.type, `${t.panel}`).toBe(t.datasourceType);
      }
      const dashboardUids = DASHBOARD_FILES.map((f) => loadDashboard(f).uid);
      const links = (loadDashboard(file) as unknown as { links?: { url: string }[] }).links ?? [];
      for (const link of links) {
        const m = /^\/d\/([^/?]+)/.exec(link.url);
        if (m) expect(dashboardUids).toContain(m[1]);
      }
    },
  );
});

describe('Grafana-managed alert rules', () => {
  interface GrafanaRule {
    uid: string;
    title: string;
    condition: string;
    data: {
      refId: string;
      datasourceUid: string;
      model: { expr?: string; expression?: string; type?: string };
    }[];
    for: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    noDataState: string;
  }
  const file = readYaml<{ groups: { folder: string; rules: GrafanaRule[] }[] }>(
    'dashboards/provisioning/alerting/tool-ledger-rules.yaml',
  );
  const grafanaRules = file.groups.flatMap((g) => g.rules);
  const datasources = readYaml<{ datasources: { uid: string; type: string }[] }>(
    'dashboards/provisioning/datasources/tool-ledger.yaml',
  ).datasources;

  it('say the same thing as the Prometheus rules: expression, for, labels and annotations', () => {
    const prometheusRules = alertRules();
    expect(grafanaRules.map((r) => r.title).sort()).toEqual(prometheusRules.map((r) => r.alert).sort());
    for (const rule of prometheusRules) {
      const copy = grafanaRules.find((r) => r.title === rule.alert) as GrafanaRule;
      const query = copy.data.find((d) => d.model.expr !== undefined);
      expect(query?.model.expr, rule.alert).toBe(rule.expr);
      expect(datasources.find((d) => d.uid === query?.datasourceUid)?.type).toBe('prometheus');
      const r = rule as unknown as { for: string; labels: Record<string, string> };
      expect(copy.for, rule.alert).toBe(r.for);
      expect(copy.labels, rule.alert).toEqual(r.labels);
      expect(copy.annotations, rule.alert).toEqual(rule.annotations);
      // The expression returns series only while its condition holds: no data is the healthy state.
      expect(copy.noDataState).toBe('OK');
    }
  });

  it('chain their queries correctly, and never use $value (which Grafana formats differently)', () => {
    for (const rule of grafanaRules) {
      const refs = new Set(rule.data.map((d) => d.refId));
      expect(refs.has(rule.condition), rule.title).toBe(true);
      for (const d of rule.data) {
        if (d.model.expression !== undefined) expect(refs.has(d.model.expression), rule.title).toBe(true);
        if (d.datasourceUid !== '__expr__') expect(datasources.map((x) => x.uid)).toContain(d.datasourceUid);
      }
      expect(JSON.stringify(rule.annotations)).not.toContain('$value');
    }
    expect(new Set(grafanaRules.map((r) => r.uid)).size).toBe(grafanaRules.length);
  });
});

describe('.ci/apt-packages.txt', () => {
  it('lists the Debian packages these tests run', () => {
    const packages = readText('.ci/apt-packages.txt')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(packages).toEqual(expect.arrayContaining(['prometheus', 'docker-compose']));
  });
});
