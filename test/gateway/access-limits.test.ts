// Access rules and per-tenant limits, from the same config file the CLI reads, with the gateway as a library over
// Streamable HTTP in front of the npm "everything" server. Identities come from verified HS256 tokens (tenant from
// the "org" claim, roles and groups from theirs). A refused call is a tool error a model can read (ACCESS_DENIED,
// or the retryable RATE_LIMITED with retryAfterMs), leaves no ledger row, and shows on the server span; every
// decision is counted in tool_ledger.gateway.decisions.
import { createHmac } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { context, propagation, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningGateway, readGatewayConfig, startGateway } from '../../src/gateway/index.js';
import { TenantLimiter } from '../../src/gateway/tenant-limits.js';
import { ToolLabels } from '../../src/gateway/tool-labels.js';
import { ATTR, GATEWAY_ATTR, GATEWAY_METRIC, GATEWAY_OTHER_TOOL } from '../../src/telemetry/vocabulary.js';
import { TelemetryHarness } from '../support/telemetry-harness.js';
import {
  type AnyClient,
  callTool,
  databaseUrl,
  EVERYTHING_SERVER,
  errorCode,
  gatewaySuite,
  httpClient,
  outcome,
  type ToolResult,
  tempDir,
  texts,
} from './support.js';

const suite = gatewaySuite('access');
const harness = new TelemetryHarness();
const SECRET = 'test-only-access-secret';
let gateway: RunningGateway;
/** The gateway's log, shown by an assertion that fails (a call refused for a reason the test did not expect). */
const logged: string[] = [];

function jwt(claims: Record<string, unknown>): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const body = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`;
  return `${body}.${createHmac('sha256', SECRET).update(body).digest('base64url')}`;
}

async function clientFor(claims: Record<string, unknown>): Promise<AnyClient> {
  return suite.client(httpClient('1.x', gateway.url as URL, { authorization: `Bearer ${jwt(claims)}` }));
}

const meta = (result: ToolResult) =>
  result._meta?.['tool-ledger/error'] as Record<string, unknown> | undefined;

beforeAll(async () => {
  harness.registerGlobal();
  const file = join(tempDir('access'), 'gateway.json');
  writeFileSync(
    file,
    JSON.stringify({
      access: {
        claims: { roles: 'roles', groups: 'teams' },
        tools: {
          'toggle-simulated-logging': { roles: ['operator', 'admin'] },
          'get-sum': { groups: ['math'] },
          'get-env': { tenants: ['acme'] },
        },
      },
      limits: {
        tenants: {
          bursty: { callsPerSecond: 1, burst: 3 },
          serial: { concurrentCalls: 1 },
        },
      },
    }),
  );
  const config = readGatewayConfig(file);
  gateway = await suite.onClose(
    startGateway({
      upstream: { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] },
      ledger: { connectionString: databaseUrl(), schema: suite.schema },
      listen: { host: '127.0.0.1', port: 0 },
      identity: { token: { secret: SECRET }, tenantClaim: 'org' },
      ...config,
      log: (line) => void logged.push(line),
    }),
  );
});
afterAll(async () => {
  trace.disable();
  context.disable();
  propagation.disable();
  await harness.shutdown();
});

const rows = async (key: string) => (await suite.runs(key)).length;

describe('access rules over verified claims', () => {
  it('lets a caller with an allowed role call the tool', async () => {
    const client = await clientFor({ sub: 'ann', org: 'acme', roles: ['operator'] });
    const result = await callTool(client, 'toggle-simulated-logging', { idempotency_key: 'acl-ok' });
    expect(outcome(result)).toBe('executed');
  });

  it('refuses a role not in the list: a tool error the model reads, no ledger row, the span says why', async () => {
    harness.spans.reset();
    const client = await clientFor({ sub: 'bob', org: 'acme', roles: 'viewer reader' });
    const result = await callTool(client, 'toggle-simulated-logging', { idempotency_key: 'acl-no' });
    expect(result.isError).toBe(true);
    expect(errorCode(result)).toBe('ACCESS_DENIED');
    expect(meta(result)).toMatchObject({ retryable: false });
    expect(texts(result)).toMatch(
      /^ACCESS_DENIED: toggle-simulated-logging may not be called by this caller: its role is not among those allowed.*Nothing was done\. Do not retry/,
    );
    expect(await rows('acl-no')).toBe(0);
    const span = harness.spans
      .getFinishedSpans()
      .find((s) => s.name === 'tools/call toggle-simulated-logging' && s.kind === 1);
    expect(span?.attributes).toMatchObject({
      [GATEWAY_ATTR.DECISION]: 'denied',
      [GATEWAY_ATTR.REASON]: 'role',
    });
  });

  it('refuses a caller whose token lacks the claim a rule needs, and checks groups and tenants', async () => {
    const noRoles = await clientFor({ sub: 'cy', org: 'acme' });
    const missing = await callTool(noRoles, 'toggle-simulated-logging', { idempotency_key: 'acl-missing' });
    expect(errorCode(missing)).toBe('ACCESS_DENIED');
    expect(texts(missing)).toMatch(/verified identity names their role, and this caller's does not/);

    const mathTeam = await clientFor({ sub: 'dee', org: 'globex', teams: 'math,ops' });
    const sum = await callTool(mathTeam, 'get-sum', { a: 1, b: 2 });
    // This failed twice under load (KEY_REQUIRED: get-sum taken for an unlisted, mutating tool): the everything
    // server's tools/list_changed at the session's start voided the gateway's own listing. The lookup now lists
    // again (test/unit/gateway-tool-lookup.test.ts); the message says what a failure was.
    expect(sum.isError, `${texts(sum)}\n${logged.join('\n')}`).toBeFalsy();
    expect(errorCode(await callTool(mathTeam, 'get-env', {}))).toBe('ACCESS_DENIED');
    const acme = await clientFor({ sub: 'eve', org: 'acme', teams: ['ops'] });
    expect(errorCode(await callTool(acme, 'get-sum', { a: 1, b: 2 }))).toBe('ACCESS_DENIED');
    expect((await callTool(acme, 'get-env', {})).isError).toBeFalsy();
    // A tool without a rule is open to every caller.
    expect((await callTool(acme, 'echo', { message: 'hi' })).isError).toBeFalsy();
  });
});

describe('per-tenant limits', () => {
  it('answers a burst over the rate with RATE_LIMITED and a retry-after that works', async () => {
    const client = await clientFor({ sub: 'fay', org: 'bursty' });
    const burst = await Promise.all(
      Array.from({ length: 6 }, (_, i) => callTool(client, 'echo', { message: `burst ${i}` })),
    );
    const limited = burst.filter((r) => errorCode(r) === 'RATE_LIMITED');
    expect(burst.filter((r) => !r.isError)).toHaveLength(3);
    expect(limited).toHaveLength(3);
    for (const result of limited) {
      expect(meta(result)).toMatchObject({ retryable: true });
      expect(meta(result)?.retryAfterMs).toBeGreaterThan(0);
      expect(texts(result)).toMatch(
        /more than 1 tool calls a second\. Nothing was done\. Wait about \d+ s, then call echo again/,
      );
    }
    const waitMs = Math.max(...limited.map((r) => meta(r)?.retryAfterMs as number));
    await new Promise((resolve) => setTimeout(resolve, waitMs));
    expect((await callTool(client, 'echo', { message: 'after the wait' })).isError).toBeFalsy();
  });

  it('refuses a call over the concurrency limit while another runs, and takes it once that one ended', async () => {
    const client = await clientFor({ sub: 'gus', org: 'serial', roles: ['admin'] });
    const long = callTool(client, 'trigger-long-running-operation', { duration: 1, steps: 1 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const second = await callTool(client, 'toggle-simulated-logging', { idempotency_key: 'serial-1' });
    expect(errorCode(second)).toBe('RATE_LIMITED');
    expect(texts(second)).toMatch(/already has 1 tool calls running at once/);
    expect(await rows('serial-1')).toBe(0);
    expect((await long).isError).toBeFalsy();
    // Refused before the ledger: the same key runs now.
    expect(outcome(await callTool(client, 'toggle-simulated-logging', { idempotency_key: 'serial-1' }))).toBe(
      'executed',
    );
  });

  it('refills continuously and keeps tenants apart (unit, on a fake clock)', () => {
    let now = 0;
    const limiter = new TenantLimiter({ perTenant: { callsPerSecond: 2, burst: 2 } }, () => now);
    expect(limiter.admit('a', 't').admitted).toBe(true);
    expect(limiter.admit('a', 't').admitted).toBe(true);
    const third = limiter.admit('a', 't');
    expect(third.admitted).toBe(false);
    expect(!third.admitted && third.error.retryAfterMs).toBe(500);
    expect(limiter.admit('b', 't').admitted).toBe(true);
    now = 500;
    expect(limiter.admit('a', 't').admitted).toBe(true);
  });
});

it('counts every decision in tool_ledger.gateway.decisions, by decision and reason', async () => {
  const points = await harness.points(GATEWAY_METRIC.DECISIONS);
  const count = (decision: string, reason: string) =>
    points
      .filter(
        (p) =>
          p.attributes[GATEWAY_ATTR.DECISION] === decision && p.attributes[GATEWAY_ATTR.REASON] === reason,
      )
      .reduce((sum, p) => sum + (p.value as number), 0);
  expect(count('denied', 'role')).toBeGreaterThanOrEqual(1);
  expect(count('denied', 'missing_role')).toBe(1);
  expect(count('denied', 'group')).toBe(1);
  expect(count('denied', 'tenant')).toBe(1);
  expect(count('limited', 'rate')).toBe(3);
  expect(count('limited', 'concurrency')).toBe(1);
  expect(count('allowed', 'none')).toBeGreaterThanOrEqual(8);
});

describe('the tool name on the decisions metric is bounded', () => {
  it('keeps listed and configured names and counts made-up ones as other, while the span keeps the name', async () => {
    harness.spans.reset();
    const client = await clientFor({ sub: 'hal', org: 'globex' });
    const madeUp = Array.from({ length: 5 }, (_, i) => `no-such-tool-${process.pid}-${i}`);
    for (const name of madeUp) await callTool(client, name, { idempotency_key: `${name}-key` });
    const points = await harness.points(GATEWAY_METRIC.DECISIONS);
    const names = new Set(points.map((p) => p.attributes[ATTR.GEN_AI_TOOL_NAME]));
    for (const name of madeUp) expect(names.has(name)).toBe(false);
    const other = points
      .filter((p) => p.attributes[ATTR.GEN_AI_TOOL_NAME] === GATEWAY_OTHER_TOOL)
      .reduce((sum, p) => sum + (p.value as number), 0);
    expect(other).toBe(madeUp.length);
    // Tools the upstream listed, and those the config names, keep their names.
    expect(names.has('echo')).toBe(true);
    expect(names.has('toggle-simulated-logging')).toBe(true);
    const spans = harness.spans.getFinishedSpans().filter((s) => s.kind === 1);
    for (const name of madeUp) expect(spans.some((s) => s.name === `tools/call ${name}`)).toBe(true);
  });

  it('takes configured names always and listed names up to its bound (unit)', () => {
    const labels = new ToolLabels(['configured'], 2);
    for (const name of ['a', 'b', 'c', 'configured']) labels.listed(name);
    expect(['configured', 'a', 'b', 'c', 'never-listed'].map((n) => labels.label(n))).toEqual([
      'configured',
      'a',
      'b',
      GATEWAY_OTHER_TOOL,
      GATEWAY_OTHER_TOOL,
    ]);
  });
});

it('refuses a config file with an unknown access or limits field, saying what is known', () => {
  const file = join(tempDir('access-bad'), 'gateway.json');
  writeFileSync(file, JSON.stringify({ access: { tools: { x: { role: ['a'] } } } }));
  expect(() => readGatewayConfig(file)).toThrow(
    /access.tools.x has an unknown field "role" \(known: roles, groups, tenants\)/,
  );
  writeFileSync(file, JSON.stringify({ limits: { perTenant: { callsPerSecond: -1 } } }));
  expect(() => readGatewayConfig(file)).toThrow(/limits.perTenant.callsPerSecond must be a positive number/);
});
