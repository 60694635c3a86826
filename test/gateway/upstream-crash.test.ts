// The upstream dies mid-call: the request was sent, no answer came, so the outcome is unknown. The gateway
// reports OUTCOME_UNKNOWN (onUnknown 'fail', its default), the row waits for an operator, and a retry with the
// same key, from a new gateway process, is not sent again. The upstream is the npm "everything" server, whose
// long-running tool (read-only by its annotations) is declared a mutation in the gateway's --config file.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  callTool,
  callWithProgress,
  EVERYTHING_SERVER,
  errorCode,
  eventually,
  gatewayCommand,
  gatewaySuite,
  LINES,
  stdioClient,
  tempDir,
  texts,
} from './support.js';

const suite = gatewaySuite('crash');
const { db, schema } = suite;
const dir = tempDir('crash');
const pidFile = join(dir, 'upstream.pid');
const config = join(dir, 'gateway.json');
writeFileSync(config, JSON.stringify({ tools: { 'trigger-long-running-operation': { kind: 'mutation' } } }));
// The same tool under a short timeout, for the case of an upstream that does not answer in time.
const shortTimeout = join(dir, 'short-timeout.json');
writeFileSync(
  shortTimeout,
  JSON.stringify({ tools: { 'trigger-long-running-operation': { kind: 'mutation', timeoutSeconds: 1 } } }),
);

// The shell records its pid, then becomes the server (exec), so the pid is the server's own.
const gateway = (configFile = config) =>
  gatewayCommand([
    ...suite.ledgerArgs(),
    '--config',
    configFile,
    '--',
    '/bin/sh',
    '-c',
    `echo $$ > '${pidFile}'; exec '${process.execPath}' '${EVERYTHING_SERVER}' stdio`,
  ]);

describe.each(LINES)('an upstream crash mid-call, MCP SDK %s client over stdio', (line) => {
  const key = `long-${line}`;
  const params = {
    name: 'trigger-long-running-operation',
    arguments: { duration: 30, steps: 30, idempotency_key: key },
  };

  it('ends as OUTCOME_UNKNOWN, leaves the row unknown and never re-sends on retry', async () => {
    const client = await stdioClient(line, gateway());
    await suite.client(client);
    let progressed = 0;
    const pending = callWithProgress(line, client, params, () => void progressed++, 120_000);
    // A progress notification proves the request reached the server and is running.
    await eventually(() => progressed > 0);
    process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGKILL');
    const result = await pending;
    expect(result.isError).toBe(true);
    expect(errorCode(result)).toBe('OUTCOME_UNKNOWN');
    expect(texts(result)).toMatch(/^OUTCOME_UNKNOWN: .*not known whether it took effect/);
    const rows = await suite.runs(key);
    expect(rows).toEqual([{ status: 'unknown', attempt: 1 }]);

    // The gateway exits with its upstream; a new one answers the retry from the ledger.
    const next = await stdioClient(line, gateway());
    await suite.client(next);
    let resent = 0;
    const retry = await callWithProgress(line, next, params, () => void resent++, 120_000);
    expect(errorCode(retry)).toBe('OUTCOME_UNKNOWN');
    expect(resent).toBe(0);
    const after = await suite.runs(key);
    expect(after).toEqual([{ status: 'unknown', attempt: 1 }]);
  });
});

describe('an upstream that does not answer in time', () => {
  it('ends a call the upstream does not answer in time as OUTCOME_UNKNOWN, not as a failure to retry', async () => {
    const client = await stdioClient('1.x', gateway(shortTimeout));
    await suite.client(client);
    const slow = await callTool(client, 'trigger-long-running-operation', {
      duration: 30,
      steps: 3,
      idempotency_key: 'slow-1',
    });
    expect(errorCode(slow)).toBe('OUTCOME_UNKNOWN');
    const rows = await db.sql<{ status: string }>(
      `SELECT status FROM "${schema}".tool_runs WHERE idempotency_key = 'slow-1'`,
    );
    expect(rows).toEqual([{ status: 'unknown' }]);
  });
});
