import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ATTR } from '../../src/telemetry/vocabulary.js';
import {
  corpus,
  EMPTY_CORPUS,
  identifiers,
  labelOf,
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

/** A .env as a user's first run writes it (scripts/stack/init-env.sh), for docker-compose to read. */
function withGeneratedEnv<T>(use: (envFile: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-env-'));
  try {
    const env = join(dir, '.env');
    execFileSync('bash', [join(ROOT, 'scripts/stack/init-env.sh'), env], { stdio: 'pipe' });
    return use(env);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// What each image listens on inside the compose network (facts about the pinned images and their flags).
const IMAGE_PORTS: Record<string, number[]> = {
  postgres: [5432],
  prometheus: [9090],
  'victoria-logs': [9428],
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
const jaeger = readYaml<Collector>('jaeger/config.yaml');

/** Every host:port a collector-style config (the collector's, Jaeger's) listens on. */
function listenEndpoints(config: Collector): string[] {
  const telemetry = (
    config.service as {
      telemetry?: {
        metrics?: { readers?: { pull?: { exporter?: { prometheus?: { host: string; port: number } } } }[] };
      };
    }
  ).telemetry;
  return [
    ...Object.values(config.receivers).flatMap((r) =>
      Object.values(r.protocols ?? {}).map((p) => p.endpoint),
    ),
    ...Object.values(config.exporters ?? {}).flatMap((e) =>
      e.endpoint?.startsWith('0.0.0.0:') ? [e.endpoint] : [],
    ),
    ...Object.values(config.extensions ?? {}).flatMap((e) => {
      const x = e as { endpoint?: string; http?: { endpoint?: string }; grpc?: { endpoint?: string } };
      return [x.endpoint, x.http?.endpoint, x.grpc?.endpoint].filter(
        (v): v is string => typeof v === 'string',
      );
    }),
    ...(telemetry?.metrics?.readers ?? []).flatMap((r) => {
      const p = r.pull?.exporter?.prometheus;
      return p ? [`${p.host}:${p.port}`] : [];
    }),
  ];
}

function containerPorts(service: string): number[] {
  if (service === 'otel-collector') return listenEndpoints(collector).map((e) => Number(e.split(':').at(-1)));
  if (service === 'jaeger') return listenEndpoints(jaeger).map((e) => Number(e.split(':').at(-1)));
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
    withGeneratedEnv((env) =>
      execFileSync(
        'docker-compose',
        ['-f', join(ROOT, 'docker-compose.yml'), '--env-file', env, 'config', '-q'],
        {
          stdio: 'pipe',
        },
      ),
    );
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
      'otel-collector',
      'postgres',
      'prometheus',
      'victoria-logs',
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

  it('publishes every port on 127.0.0.1 only', () => {
    for (const [name, service] of Object.entries(services)) {
      for (const port of service.ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it('has no fixed credentials: every password comes from .env, which init-env.sh generates', () => {
    const secretNames = /PASSWORD|SECRET/;
    const used = new Set<string>();
    for (const [name, service] of Object.entries(services)) {
      for (const [variable, value] of Object.entries(service.environment ?? {})) {
        if (!secretNames.test(variable)) continue;
        expect(value, `${name} ${variable}`).toMatch(/^\$\{[A-Z_]+(:[?-][^}]*)?\}$/);
        used.add(/^\$\{([A-Z_]+)/.exec(value)?.[1] as string);
      }
    }
    const documented = [...readText('.env.example').matchAll(/^#?\s?([A-Z_]+)=/gm)].map((m) => m[1]);
    expect(documented).toEqual(expect.arrayContaining([...used]));
    withGeneratedEnv((env) => {
      const generated = Object.fromEntries(
        readFileSync(env, 'utf8')
          .split('\n')
          .filter((l) => /^[A-Z_]+=/.test(l))
          .map((l) => l.split('=') as [string, string]),
      );
      for (const variable of used) expect(generated[variable], variable).toMatch(/^[0-9a-f]{48}$/);
      execFileSync(
        'docker-compose',
        ['-f', join(ROOT, 'docker-compose.yml'), '--env-file', env, 'config', '-q'],
        {
          stdio: 'pipe',
        },
      );
      // A second run keeps the first file's values.
      const before = readFileSync(env, 'utf8');
      execFileSync('bash', [join(ROOT, 'scripts/stack/init-env.sh'), env], { stdio: 'pipe' });
      expect(readFileSync(env, 'utf8')).toBe(before);
    });
    const withoutEnv = spawnSync('docker-compose', ['-f', join(ROOT, 'docker-compose.yml'), 'config', '-q'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
      cwd: tmpdir(),
    });
    expect(withoutEnv.status, 'compose must refuse to start without .env').not.toBe(0);
    expect(withoutEnv.stderr).toContain('init-env.sh');
  });

  it('runs Grafana without anonymous access or sign-up, and Prometheus without lifecycle endpoints', () => {
    const grafana = services.grafana?.environment ?? {};
    expect(grafana.GF_AUTH_ANONYMOUS_ENABLED).toBe('false');
    expect(grafana.GF_USERS_ALLOW_SIGN_UP).toBe('false');
    expect(JSON.stringify(services.prometheus?.command)).not.toContain('lifecycle');
  });
});

describe('the native builds', () => {
  const versions = Object.fromEntries(
    [...readText('scripts/stack/versions.sh').matchAll(/^([A-Z_]+)=(\S+)/gm)].map((m) => [m[1], m[2]]),
  );

  it('pin the versions docker-compose.yml pins', () => {
    expect(services.jaeger?.image).toBe(`jaegertracing/jaeger:${versions.JAEGER_VERSION}`);
    expect(services['otel-collector']?.image).toBe(
      `otel/opentelemetry-collector-contrib:${versions.OTELCOL_VERSION}`,
    );
    expect(services['victoria-logs']?.image).toBe(
      `victoriametrics/victoria-logs:v${versions.VICTORIA_LOGS_VERSION}`,
    );
  });

  it("build a collector with exactly the shipped config's components, all at the pinned release", () => {
    const manifest = readYaml<Record<string, { gomod: string }[]> & { dist: { version: string } }>(
      'collector/builder-config.yaml',
    );
    expect(manifest.dist.version).toBe(versions.OTELCOL_VERSION);
    // The component type is the module's last path element without its kind: otlpreceiver -> otlp.
    const KIND_SUFFIX = {
      receivers: 'receiver',
      processors: 'processor',
      exporters: 'exporter',
      extensions: 'extension',
    } as const;
    for (const [kind, suffix] of Object.entries(KIND_SUFFIX)) {
      const built = (manifest[kind] ?? []).map((c) => {
        const [module, version] = c.gomod.split(' ') as [string, string];
        expect(version, module).toBe(`v${versions.OTELCOL_VERSION}`);
        return (module.split('/').at(-1) as string).replace(new RegExp(`${suffix}$`), '');
      });
      const used = Object.keys(
        (collector as unknown as Record<string, Record<string, unknown>>)[kind] ?? {},
      ).map((name) => (name.split('/')[0] as string).replaceAll('_', ''));
      expect([...new Set(built)].sort(), kind).toEqual([...new Set(used)].sort());
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

  it('receives OTLP on gRPC 4317 and HTTP 4318 and sends traces to Jaeger, metrics to Prometheus, logs to VictoriaLogs', () => {
    expect(collector.receivers.otlp?.protocols.grpc?.endpoint).toBe('0.0.0.0:4317');
    expect(collector.receivers.otlp?.protocols.http?.endpoint).toBe('0.0.0.0:4318');
    const exporterOf = (pipeline: string) => pipelines[pipeline]?.exporters ?? [];
    expect(exporterOf('traces')).toEqual(['otlp/jaeger']);
    expectServiceAddress(String(collector.exporters['otlp/jaeger']?.endpoint), 'otlp/jaeger');
    expect(exporterOf('metrics')).toEqual(['prometheus']);
    expect(collector.exporters.prometheus?.enable_open_metrics).toBe(true);
    expect(exporterOf('logs')).toEqual(['otlphttp/victorialogs']);
    const logs = String(collector.exporters['otlphttp/victorialogs']?.endpoint);
    expect(logs).toMatch(/\/insert\/opentelemetry$/);
    expectServiceAddress(logs, 'otlphttp/victorialogs');
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

  // Go's RE2 and JavaScript in Unicode mode agree on the syntax these patterns use (classes, groups, \b, \d,
  // \p{…} classes, counted repeats).
  const patterns = ((redactions[0]?.[1].blocked_values ?? []) as string[]).map((p) => new RegExp(p, 'gu'));
  const mask = (text: string) => patterns.reduce((t, p) => t.replace(p, '****'), text);
  // The classes the library detects by format or label that a regular expression without checksums can still
  // catch. Names and addresses are the library's alone.
  const MASKED = ['email', 'phone', 'credit_card', 'ssn', 'national_id', 'ip', 'iban', 'api_token'];
  const maskSuite = (corpus: PiiCorpus) => {
    it.each(corpus.values.filter((v) => MASKED.includes(v.category)).map((v) => [v.category, v.value]))(
      'redaction masks %s %s, in text and inside a raw key',
      (_category, value) => {
        // A raw key attribute gets the same patterns as any other value: personal data in it is masked
        for (const text of [`value ${value} here`, `customer:${value}`, `pay-${value}`]) {
          expect(mask(text), text).not.toContain(value);
        }
      },
    );

    it.each(corpus.values.filter((v) => labelOf(v.category) !== undefined).map((v) => [v.category, v.value]))(
      'redaction masks the labelled-only %s %s after its label',
      (category, value) => {
        const label = labelOf(category) ?? category;
        for (const text of [
          `${label} ${value}`,
          `${label}: ${value}`,
          `{"${category}":"${value}"}`,
          `my ${category.replace(/_/g, ' ')} is ${value}`,
        ]) {
          expect(mask(text), text).not.toContain(value);
        }
      },
    );

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
    ['C++ scope', 'std::vector'],
    ['prose after a token label', 'Token refresh failed'],
    ['library markers', '"password":"[REDACTED]", password is [SECRET]'],
  ])('redaction leaves a %s alone', (_what, value) => {
    expect(mask(value)).toBe(value);
  });

  it.each(identifiers)('redaction leaves the $format $value alone', ({ value }) => {
    for (const text of [value, `id ${value} not found`]) expect(mask(text)).toBe(text);
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

/** The one base of the alerts' runbook links (prometheus/prometheus.yml, global.external_labels.runbook_base). */
const RUNBOOK_BASE = readYaml<{ global: { external_labels: { runbook_base: string } } }>(
  'prometheus/prometheus.yml',
).global.external_labels.runbook_base;

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

  it('the runbook links share one configurable, absolute base: prometheus.yml external label runbook_base', () => {
    expect(RUNBOOK_BASE).toMatch(/^https:\/\/[^\s#]+\/docs\/operations\.md$/);
    // The rule unit tests render the links with the same base.
    const tests = readYaml<{ tests: { external_labels?: Record<string, string> }[] }>(
      'prometheus/rules/tool-ledger.rules.test.yml',
    ).tests;
    for (const group of tests) expect(group.external_labels?.runbook_base).toBe(RUNBOOK_BASE);
  });

  it.each(alertRules().map((r) => [r.alert as string, r] as const))(
    '%s links to its runbook',
    (_name, rule) => {
      const url = rule.annotations?.runbook_url ?? '';
      const [base, anchor] = url.split('#');
      expect(base).toBe('{{ $externalLabels.runbook_base }}');
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

  it('provisions Prometheus, Jaeger, VictoriaLogs and PostgreSQL, each pointing at a compose service', () => {
    expect(datasources.map((d) => d.type).sort()).toEqual([
      'grafana-postgresql-datasource',
      'jaeger',
      'prometheus',
      'victoriametrics-logs-datasource',
    ]);
    for (const d of datasources) expectServiceAddress(d.url, `datasource ${d.uid}`);
    expect(services.grafana?.environment?.GF_INSTALL_PLUGINS).toContain('victoriametrics-logs-datasource');
  });

  it("logs PostgreSQL in as explorer.sql's read-only role, with the password from .env", () => {
    const pgSource = datasources.find((d) => d.type === 'grafana-postgresql-datasource');
    const env = services.postgres?.environment ?? {};
    expect(pgSource?.jsonData?.database).toBe(env.POSTGRES_DB);
    expect(pgSource?.user).not.toBe(env.POSTGRES_USER);
    expect(readText('postgres/init-explorer.sh')).toContain(`-v reader=${pgSource?.user} `);
    expect(pgSource?.secureJsonData?.password).toBe('$GRAFANA_PG_PASSWORD');
    expect(services.grafana?.environment?.GRAFANA_PG_PASSWORD).toBe(env.GRAFANA_PG_PASSWORD);
    const init = mounts('postgres').find((m) => m.source === './postgres/init-explorer.sh');
    expect(init?.target).toMatch(/^\/docker-entrypoint-initdb\.d\//);
    const sql = mounts('postgres').find((m) => m.source === './postgres/explorer.sql');
    expect(readText('postgres/init-explorer.sh')).toContain(`-f ${sql?.target}`);
  });

  it('links exemplars, log trace ids and traces-to-logs to datasources that exist', () => {
    const prom = uids.get('prometheus')?.jsonData as {
      exemplarTraceIdDestinations: { datasourceUid: string }[];
    };
    for (const d of prom.exemplarTraceIdDestinations) expect(uids.get(d.datasourceUid)?.type).toBe('jaeger');
    const logs = uids.get('victorialogs')?.jsonData as { derivedFields: { datasourceUid: string }[] };
    for (const d of logs.derivedFields) expect(uids.get(d.datasourceUid)?.type).toBe('jaeger');
    const jaegerSource = uids.get('jaeger')?.jsonData as { tracesToLogsV2: { datasourceUid: string } };
    expect(uids.get(jaegerSource.tracesToLogsV2.datasourceUid)?.type).toBe('victoriametrics-logs-datasource');
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
      // Grafana cannot read Prometheus' external labels: its copies carry the links as Prometheus renders them.
      expect(copy.annotations, rule.alert).toEqual({
        ...rule.annotations,
        runbook_url: rule.annotations?.runbook_url?.replace(
          '{{ $externalLabels.runbook_base }}',
          RUNBOOK_BASE,
        ),
      });
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
