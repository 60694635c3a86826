import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, readText, readYaml } from './configs.js';
import { freePort } from './processes.js';

/**
 * The operations stack's real programs, started natively: the binaries scripts/stack/build.sh builds into the
 * stack cache, Debian's prometheus, each with the config file docker-compose.yml mounts and only hosts, ports
 * and mount paths substituted.
 */

const versions = Object.fromEntries(
  [...readText('scripts/stack/versions.sh').matchAll(/^([A-Z_]+)=(\S+)/gm)].map((m) => [m[1], m[2]]),
) as Record<string, string>;

export const STACK_CACHE = process.env.TOOL_LEDGER_STACK_CACHE ?? join(homedir(), '.cache/tool-ledger/stack');

export const BINARIES = {
  jaeger: join(STACK_CACHE, `jaeger-${versions.JAEGER_VERSION}`, 'jaeger'),
  otelcol: join(STACK_CACHE, `otelcol-${versions.OTELCOL_VERSION}`, 'otelcol-tool-ledger'),
  victoriaLogs: join(STACK_CACHE, `victoria-logs-${versions.VICTORIA_LOGS_VERSION}`, 'victoria-logs'),
} as const;

/** What is missing to run the stack natively, in words; empty when everything is there. */
export function missingPrograms(): string[] {
  const missing = Object.entries(BINARIES)
    .filter(([, path]) => !existsSync(path))
    .map(([name, path]) => `${name} (${path})`);
  const built = join(STACK_CACHE, `otelcol-${versions.OTELCOL_VERSION}`, 'builder-config.yaml');
  if (existsSync(built) && readFileSync(built, 'utf8') !== readText('collector/builder-config.yaml'))
    missing.push('otelcol built from the current collector/builder-config.yaml');
  if (spawnSync('prometheus', ['--version']).status !== 0) missing.push('prometheus on PATH');
  return missing;
}

/**
 * Replaces each `from` with its `to`; every `from` must occur, so a renamed listener in a shipped config
 * fails here instead of silently keeping the compose value.
 */
export function substitute(
  text: string,
  pairs: readonly (readonly [string, string])[],
  what: string,
): string {
  let out = text;
  for (const [from, to] of pairs) {
    if (!out.includes(from)) throw new Error(`${what}: expected ${JSON.stringify(from)} to substitute`);
    out = out.replaceAll(from, to);
  }
  return out;
}

interface Service {
  command?: string[];
}
const services = readYaml<{ services: Record<string, Service> }>('docker-compose.yml').services;

/** The compose command of a service, each flag's value replaced where `values` names the flag. */
export function composeCommand(service: string, values: Record<string, string>): string[] {
  const command = services[service]?.command ?? [];
  const used = new Set<string>();
  const out = command.map((arg) => {
    const flag = arg.split('=')[0] as string;
    if (!(flag in values)) return arg;
    used.add(flag);
    return `${flag}=${values[flag]}`;
  });
  for (const flag of Object.keys(values)) {
    if (!used.has(flag)) throw new Error(`${service}: compose command has no ${flag}`);
  }
  return out;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a value, at most `timeoutMs`; the last error goes into the failure. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs: number,
  intervalMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
      );
    }
    await sleep(intervalMs);
  }
}

export interface Program {
  readonly name: string;
  output(): string;
  stop(): Promise<void>;
}

export function startProgram(
  name: string,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Program {
  const child: ChildProcess = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-200_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return {
    name,
    output: () => output,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

export async function getJson<T>(url: string): Promise<T> {
  const response = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

export interface StackPorts {
  collectorGrpc: number;
  collectorHttp: number;
  collectorMetrics: number;
  collectorHealth: number;
  collectorSelf: number;
  jaegerGrpc: number;
  jaegerHttp: number;
  jaegerQuery: number;
  jaegerQueryGrpc: number;
  jaegerHealth: number;
  jaegerSelf: number;
  prometheus: number;
  victoriaLogs: number;
}

export interface Stack {
  readonly ports: StackPorts;
  readonly dir: string;
  readonly jaegerUrl: string;
  readonly prometheusUrl: string;
  readonly logsUrl: string;
  readonly otlpHttpUrl: string;
  readonly programs: readonly Program[];
  /** The collector config as it runs, for `otelcol validate`. */
  readonly collectorConfig: string;
  stop(): Promise<void>;
}

async function allocatePorts(): Promise<StackPorts> {
  const names = [
    'collectorGrpc',
    'collectorHttp',
    'collectorMetrics',
    'collectorHealth',
    'collectorSelf',
    'jaegerGrpc',
    'jaegerHttp',
    'jaegerQuery',
    'jaegerQueryGrpc',
    'jaegerHealth',
    'jaegerSelf',
    'prometheus',
    'victoriaLogs',
  ] as const;
  const ports: Partial<StackPorts> = {};
  const taken = new Set<number>();
  for (const name of names) {
    let port = await freePort();
    while (taken.has(port)) port = await freePort();
    taken.add(port);
    ports[name] = port;
  }
  return ports as StackPorts;
}

const local = (port: number) => `127.0.0.1:${port}`;

/**
 * Starts VictoriaLogs, Jaeger, the collector and Prometheus, and waits (bounded) until each answers. The
 * Prometheus config's intervals become `intervalSeconds`, the only change to its timing: the rules are the
 * shipped ones.
 */
export async function startStack(intervalSeconds: number, fixedPorts?: StackPorts): Promise<Stack> {
  const ports = fixedPorts ?? (await allocatePorts());
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-stack-'));
  const programs: Program[] = [];
  const stop = async () => {
    for (const program of [...programs].reverse()) await program.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    mkdirSync(join(dir, 'logs-data'));
    programs.push(
      startProgram(
        'victoria-logs',
        BINARIES.victoriaLogs,
        composeCommand('victoria-logs', {
          '-httpListenAddr': local(ports.victoriaLogs),
          '-storageDataPath': join(dir, 'logs-data'),
        }),
      ),
    );

    const jaegerConfig = join(dir, 'jaeger.yaml');
    writeFileSync(
      jaegerConfig,
      substitute(
        readText('jaeger/config.yaml'),
        [
          ['0.0.0.0:4317', local(ports.jaegerGrpc)],
          ['0.0.0.0:4318', local(ports.jaegerHttp)],
          ['0.0.0.0:16686', local(ports.jaegerQuery)],
          ['0.0.0.0:16685', local(ports.jaegerQueryGrpc)],
          ['0.0.0.0:13133', local(ports.jaegerHealth)],
          ['host: 0.0.0.0', 'host: 127.0.0.1'],
          ['port: 8888', `port: ${ports.jaegerSelf}`],
        ],
        'jaeger/config.yaml',
      ),
    );
    programs.push(
      startProgram('jaeger', BINARIES.jaeger, composeCommand('jaeger', { '--config': jaegerConfig })),
    );

    const collectorConfig = join(dir, 'otel-collector.yaml');
    writeFileSync(
      collectorConfig,
      substitute(
        readText('collector/otel-collector.yaml'),
        [
          ['0.0.0.0:4317', local(ports.collectorGrpc)],
          ['0.0.0.0:4318', local(ports.collectorHttp)],
          ['0.0.0.0:8889', local(ports.collectorMetrics)],
          ['0.0.0.0:13133', local(ports.collectorHealth)],
          ['host: 0.0.0.0', 'host: 127.0.0.1'],
          ['port: 8888', `port: ${ports.collectorSelf}`],
          ['jaeger:4317', local(ports.jaegerGrpc)],
          ['http://victoria-logs:9428', `http://${local(ports.victoriaLogs)}`],
        ],
        'collector/otel-collector.yaml',
      ),
    );
    programs.push(
      startProgram(
        'otelcol',
        BINARIES.otelcol,
        composeCommand('otel-collector', { '--config': collectorConfig }),
      ),
    );

    const promConfig = join(dir, 'prometheus.yml');
    writeFileSync(
      promConfig,
      substitute(
        readText('prometheus/prometheus.yml'),
        [
          ['otel-collector:8889', local(ports.collectorMetrics)],
          ['localhost:9090', local(ports.prometheus)],
          ['/etc/prometheus/rules/', `${join(ROOT, 'prometheus/rules')}/`],
          ['scrape_interval: 15s', `scrape_interval: ${intervalSeconds}s`],
          ['evaluation_interval: 15s', `evaluation_interval: ${intervalSeconds}s`],
        ],
        'prometheus/prometheus.yml',
      ),
    );
    programs.push(
      startProgram('prometheus', 'prometheus', [
        ...composeCommand('prometheus', {
          '--config.file': promConfig,
          '--storage.tsdb.path': join(dir, 'prometheus-data'),
        }),
        `--web.listen-address=${local(ports.prometheus)}`,
      ]),
    );

    const stack: Stack = {
      ports,
      dir,
      jaegerUrl: `http://${local(ports.jaegerQuery)}`,
      prometheusUrl: `http://${local(ports.prometheus)}`,
      logsUrl: `http://${local(ports.victoriaLogs)}`,
      otlpHttpUrl: `http://${local(ports.collectorHttp)}`,
      programs,
      collectorConfig,
      stop,
    };
    const ready: [string, string][] = [
      ['victoria-logs', `${stack.logsUrl}/health`],
      ['jaeger', `http://${local(ports.jaegerHealth)}/status`],
      ['otelcol', `http://${local(ports.collectorHealth)}/`],
      ['prometheus', `${stack.prometheusUrl}/-/ready`],
    ];
    for (const [name, url] of ready) {
      await waitFor(
        `${name} at ${url}\n${programs.find((p) => p.name === name)?.output() ?? ''}`,
        async () => ((await fetch(url, { signal: AbortSignal.timeout(2000) })).ok ? true : undefined),
        60_000,
        250,
      );
    }
    return stack;
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The address of one of Prometheus' web pages that this Prometheus really serves. Upstream builds serve the React
 * UI at `/alerts`; Debian's 2.42 package is built without it and serves the classic pages at `/classic/alerts`
 * (its `/alerts` is a 404). Probed rather than read from the version, so the printed link is one that answers;
 * the JSON API (`/api/v1/alerts`), which every version serves, when neither page does.
 */
export async function prometheusPage(baseUrl: string, page: 'alerts' | 'graph' | 'targets'): Promise<string> {
  for (const path of [`/${page}`, `/classic/${page}`]) {
    try {
      const response = await fetch(`${baseUrl}${path}`, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      if (response.ok) return `${baseUrl}${path}`;
    } catch {
      // try the next form
    }
  }
  return `${baseUrl}/api/v1/${page === 'alerts' ? 'alerts' : page === 'targets' ? 'targets' : 'query?query=up'}`;
}

/** What `npm run stack` prints: addresses that answer on this stack, and where to look instead of a Jaeger UI. */
export async function describeStack(stack: Stack, service = 'tool-ledger-demo'): Promise<string> {
  const alerts = await prometheusPage(stack.prometheusUrl, 'alerts');
  const graph = await prometheusPage(stack.prometheusUrl, 'graph');
  return `tool-ledger stack running natively (configs in ${stack.dir}):
  send OTLP to  ${stack.otlpHttpUrl}   e.g. OTEL_EXPORTER_OTLP_ENDPOINT=${stack.otlpHttpUrl} npm run demo
  Prometheus    ${alerts}   (alerts and their runbook links)
                ${graph}
  VictoriaLogs  ${stack.logsUrl}/select/vmui   (the decision log records; LogsQL)
  Jaeger API    ${stack.jaegerUrl}/api/traces?service=${service}
                ${stack.jaegerUrl}/api/traces/<trace id>
    The Jaeger built from Go modules has no web UI: ${stack.jaegerUrl}/ is a placeholder page ("This is not the
    Jaeger UI you are looking for"). Read traces through the API above, or start from a key:
    DATABASE_URL=... npx tool-ledger inspect --key K --jaeger-url ${stack.jaegerUrl}   (the run, its trace id)
Ctrl-C stops everything.`;
}
