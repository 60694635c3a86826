import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import * as otelApi from '@opentelemetry/api';
import { beforeAll, describe, expect, it } from 'vitest';
import { databaseUrl, postgresBackend, uniqueSchema } from '../support/db.js';

const root = join(import.meta.dirname, '../..');
const fixtures = join(import.meta.dirname, 'fixtures');
/** The SDK line installed: @opentelemetry/api 1.10, which has the logs API, is the 3.x packages'. */
const line3 = 'logs' in otelApi && otelApi.logs !== undefined;
/** How the bootstrap's install hints spell a package of the installed line (2.x ones need a version range). */
const spec = (name: string, range2: string) => (line3 ? name : `${name}@"${range2}"`);

function line(output: string, tag: string): unknown {
  const found = output.split('\n').find((l) => l.startsWith(`${tag} `));
  if (!found) throw new Error(`no ${tag} line in:\n${output}`);
  return JSON.parse(found.slice(tag.length + 1));
}

describe('the built package, imported by name', () => {
  const backend = postgresBackend();

  beforeAll(() => {
    if (!existsSync(join(root, 'dist/index.js'))) execFileSync('npm', ['run', 'build'], { cwd: root });
  });

  it('works through the exports map and pulls in no optional SDK or PGlite for a pg user', async () => {
    const schema = uniqueSchema('pkg');
    const output = execFileSync(
      process.execPath,
      ['--import', join(fixtures, 'record-loads.mjs'), join(fixtures, 'consumer.mjs'), databaseUrl(), schema],
      { cwd: root, encoding: 'utf8' },
    );
    await backend.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    expect(line(output, 'RESULT')).toEqual({
      first: 'executed',
      again: 'replayed',
      value: { ticket: 'T-1' },
      conflict: 'KEY_REUSED',
    });
    const loaded = (line(output, 'LOADED') as string[]).filter((url) => url.includes('/node_modules/'));
    expect(loaded.some((url) => url.includes('/node_modules/pg/'))).toBe(true);
    const heavy = loaded.filter((url) =>
      /node_modules\/(@modelcontextprotocol|ai|@ai-sdk|@openai|@opentelemetry\/sdk-|@opentelemetry\/exporter-|@electric-sql)\//.test(
        url,
      ),
    );
    expect(heavy).toEqual([]);
  });

  it('serves the console from its subpath export, tool-ledger/console', async () => {
    const schema = uniqueSchema('pkg_console');
    const output = execFileSync(
      process.execPath,
      [join(fixtures, 'console-consumer.mjs'), databaseUrl(), schema],
      { cwd: root, encoding: 'utf8' },
    );
    await backend.sql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    expect(line(output, 'SERVED')).toEqual({ status: 200, overview: true, writable: false });
  });

  it('publishes type declarations for every entry point', async () => {
    const { exports } = (await import(join(root, 'package.json'), { with: { type: 'json' } })).default as {
      exports: Record<string, { types?: string; import?: string } | string>;
    };
    for (const [entry, target] of Object.entries(exports)) {
      if (typeof target === 'string') continue;
      expect(target.types, entry).toBeDefined();
      expect(existsSync(join(root, target.types!)), `${entry} types`).toBe(true);
      expect(existsSync(join(root, target.import!)), `${entry} import`).toBe(true);
    }
  });

  it('names the package to install when OTEL_EXPORTER_OTLP_PROTOCOL asks for an exporter that is missing', () => {
    const run = (hide: string) =>
      execFileSync(
        process.execPath,
        ['--require', join(fixtures, 'hide-packages.cjs'), join(fixtures, 'start-otel.mjs')],
        {
          cwd: root,
          encoding: 'utf8',
          env: {
            ...process.env,
            HIDE_PACKAGES: hide,
            OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
            OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
          },
        },
      );

    expect(line(run('@opentelemetry/exporter-metrics-otlp-grpc'), 'FAILED')).toEqual({
      code: 'CONFIG_INVALID',
      message: expect.stringContaining(
        `OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the package @opentelemetry/exporter-metrics-otlp-grpc, which could not be loaded; install it (npm install ${spec('@opentelemetry/exporter-metrics-otlp-grpc', '<0.300')}) or set OTEL_EXPORTER_OTLP_PROTOCOL to http/json.`,
      ),
    });
    expect(line(run(''), 'STARTED')).toContain('traces otlp (grpc), metrics otlp (grpc), logs otlp (grpc)');
  });

  it('names the npm install line when an SDK package the bootstrap needs is missing, instead of a bare ERR_MODULE_NOT_FOUND', () => {
    const output = execFileSync(
      process.execPath,
      ['--require', join(fixtures, 'hide-packages.cjs'), join(fixtures, 'start-otel.mjs')],
      {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, HIDE_PACKAGES: '@opentelemetry/sdk-node,@opentelemetry/sdk-logs' },
      },
    );
    expect(line(output, 'FAILED')).toEqual({
      code: 'CONFIG_INVALID',
      message: `tool-ledger/otel needs the OpenTelemetry SDK packages @opentelemetry/sdk-node, @opentelemetry/sdk-logs (the SDK ${line3 ? '3.x' : '2.x'} line, chosen from what is installed), which could not be found; install them: npm install ${spec('@opentelemetry/sdk-node', '<0.300')} ${spec('@opentelemetry/sdk-logs', '<1')}`,
    });
  });

  it('prints spans to the console when OTEL_TRACES_EXPORTER=console, with no OTLP endpoint set', () => {
    const { OTEL_EXPORTER_OTLP_ENDPOINT: _unset, ...env } = process.env;
    const output = execFileSync(process.execPath, [join(fixtures, 'start-otel.mjs')], {
      cwd: root,
      encoding: 'utf8',
      env: {
        ...env,
        CALL: '1',
        OTEL_TRACES_EXPORTER: 'console',
        OTEL_METRICS_EXPORTER: 'none',
        OTEL_LOGS_EXPORTER: 'none',
      },
    });

    expect(line(output, 'STARTED')).toContain('traces console, metrics none, logs none');
    expect(output).toContain("name: 'execute_tool send_invoice'");
    expect(output).toMatch(/'tool_ledger\.idempotency\.outcome': 'executed'/);
  });
});
