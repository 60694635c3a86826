import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrometheusServer, startPrometheus } from './support/processes.js';
import { prometheusPage } from './support/stack.js';

/**
 * Issue 26: the Prometheus addresses `npm run stack` prints are ones this Prometheus serves. Debian's 2.42 has
 * no React UI and 404s on /alerts (it serves /classic/alerts); upstream builds serve /alerts. Against the real
 * Prometheus on PATH. The whole printout is checked against the running stack in test/ops/stack.test.ts.
 */

const required = process.env.TOOL_LEDGER_STACK_REQUIRED === '1' || process.env.CI === 'true';
const absent = spawnSync('prometheus', ['--version']).status !== 0;
if (absent && !required) {
  console.warn(
    "test/ops/stack-urls.test.ts SKIPPED: no prometheus on PATH; install Debian's prometheus package.",
  );
}

let prometheus: PrometheusServer | undefined;
beforeAll(async () => {
  if (absent && !required) return;
  prometheus = await startPrometheus(9, [], new Map());
}, 60_000);
afterAll(async () => {
  await prometheus?.stop();
});

describe.skipIf(absent && !required)("Prometheus' pages", () => {
  it.each(['alerts', 'graph', 'targets'] as const)('the %s address answers with the page', async (page) => {
    const url = await prometheusPage(prometheus?.url ?? '', page);
    const response = await fetch(url);
    expect(response.status, url).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/html');
    const version = spawnSync('prometheus', ['--version'], { encoding: 'utf8' }).stdout;
    // The case of the issue: Debian's 2.42 serves the classic page only.
    if (/version 2\.42\./.test(version) && page !== 'graph') {
      expect(url).toBe(`${prometheus?.url}/classic/${page}`);
    }
    await response.arrayBuffer();
  });
});
