// The gateway's --database-url takes a libpq multi-host URL: a host that refuses is listed first, so the ledger
// behind the gateway works only if the host list is read. (createLedger and the CLI: test/db/multi-host-url.test.ts.)
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  callTool,
  cliDatabaseUrl,
  filesystemGatewayArgs,
  freePort,
  gatewayCommand,
  gatewaySuite,
  outcome,
  stdioClient,
  tempDir,
} from './support.js';

describe('gateway with a multi-host --database-url', () => {
  const { db, schema, ...suite } = gatewaySuite('mh');
  const dir = tempDir('mh');

  it('skips the refusing host and replays a repeated move_file from the ledger', async () => {
    // A password goes in PGPASSWORD, never on the command line (the gateway refuses it there).
    const url = new URL(cliDatabaseUrl());
    const user = url.username ? `${url.username}@` : '';
    const refusing = `127.0.0.1:${await freePort()}`;
    const hostList = `${url.protocol}//${user}${refusing},${url.host}${url.pathname}?target_session_attrs=read-write`;
    const client = await suite.client(
      stdioClient('1.x', gatewayCommand(filesystemGatewayArgs(schema, dir, hostList))),
    );
    writeFileSync(join(dir, 'a.txt'), 'alpha');
    const args = { source: join(dir, 'a.txt'), destination: join(dir, 'b.txt'), idempotency_key: 'mh-move' };
    expect(outcome(await callTool(client, 'move_file', args))).toBe('executed');
    expect(outcome(await callTool(client, 'move_file', args))).toBe('replayed');
    expect(existsSync(join(dir, 'a.txt'))).toBe(false);
    expect(readFileSync(join(dir, 'b.txt'), 'utf8')).toBe('alpha');
    const rows = await db.sql<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".tool_runs`);
    expect(rows[0]?.n).toBe(1);
  });
});
