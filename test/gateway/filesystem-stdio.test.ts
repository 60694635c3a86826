// The gateway's CLI over stdio in front of the reference filesystem server from npm, whose move_file is
// annotated destructive and not idempotent: a second real move fails ("Destination already exists" or ENOENT).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type AnyClient,
  callTool,
  database,
  errorCode,
  filesystemGatewayArgs,
  gatewayCommand,
  LINES,
  outcome,
  stdioClient,
  tempDir,
  texts,
} from './support.js';

const db = database();
afterAll(() => db.end());

describe.each(LINES)('gateway over stdio, MCP SDK %s client, filesystem server', (line) => {
  const schema = `gw_fs_${line.replace('.', '')}_${process.pid}`;
  const dir = tempDir('fs');
  const gateway = () => gatewayCommand(filesystemGatewayArgs(schema, dir));
  let client: AnyClient | undefined;
  const connect = async () => {
    client = await stdioClient(line, gateway());
    return client;
  };
  afterAll(async () => {
    await client?.close();
    await db.drop(schema);
  });

  it('publishes a required idempotency_key on mutating tools only', async () => {
    const c = await connect();
    const { tools } = await c.listTools();
    const move = tools.find((t) => t.name === 'move_file');
    const read = tools.find((t) => t.name === 'read_text_file');
    expect(move?.inputSchema.required).toEqual(
      expect.arrayContaining(['source', 'destination', 'idempotency_key']),
    );
    expect(move?.description).toMatch(/Replay-safe: a repeated call with the same idempotency_key/);
    expect(move?.annotations).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(read?.inputSchema.properties).not.toHaveProperty('idempotency_key');
    expect(read?.annotations).toMatchObject({ readOnlyHint: true });
  });

  it('replays a repeated move_file from the ledger and moves the file once', async () => {
    const c = client as AnyClient;
    writeFileSync(join(dir, 'a.txt'), 'alpha');
    const args = { source: join(dir, 'a.txt'), destination: join(dir, 'b.txt'), idempotency_key: 'move-a-b' };
    const first = await callTool(c, 'move_file', args);
    expect(first.isError).toBeFalsy();
    expect(outcome(first)).toBe('executed');
    expect(existsSync(join(dir, 'a.txt'))).toBe(false);
    expect(readFileSync(join(dir, 'b.txt'), 'utf8')).toBe('alpha');

    const again = await callTool(c, 'move_file', args);
    expect(again.isError).toBeFalsy();
    expect(outcome(again)).toBe('replayed');
    expect(again.content[0]?.text).toMatch(
      /^Replayed: move_file already did this request at .* this is the original result\.$/,
    );
    expect(again.content.slice(1)).toEqual(first.content);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(readFileSync(join(dir, 'b.txt'), 'utf8')).toBe('alpha');
  });

  it('refuses the same key with other arguments, with the MCP adapter text', async () => {
    const c = client as AnyClient;
    const changed = await callTool(c, 'move_file', {
      source: join(dir, 'b.txt'),
      destination: join(dir, 'c.txt'),
      idempotency_key: 'move-a-b',
    });
    expect(changed.isError).toBe(true);
    expect(errorCode(changed)).toBe('KEY_REUSED');
    expect(texts(changed)).toMatch(
      /^KEY_REUSED: This "idempotency_key" was already used for a request with different arguments\. Nothing was done\./,
    );
    expect(existsSync(join(dir, 'c.txt'))).toBe(false);
  });

  it('refuses a mutating call without a key and says how to send one', async () => {
    const c = client as AnyClient;
    const missing = await callTool(c, 'move_file', {
      source: join(dir, 'b.txt'),
      destination: join(dir, 'd.txt'),
    });
    expect(missing.isError).toBe(true);
    expect(errorCode(missing)).toBe('KEY_REQUIRED');
    expect(texts(missing)).toMatch(
      /needs the "idempotency_key" argument\. Nothing was done\. Call it again with "idempotency_key" set to a new unique string/,
    );
    expect(existsSync(join(dir, 'd.txt'))).toBe(false);
  });

  it('takes the key from _meta["tool-ledger/idempotency-key"] too', async () => {
    const c = client as AnyClient;
    writeFileSync(join(dir, 'm.txt'), 'meta');
    const args = { source: join(dir, 'm.txt'), destination: join(dir, 'm2.txt') };
    const meta = { 'tool-ledger/idempotency-key': 'move-by-meta' };
    expect(outcome(await callTool(c, 'move_file', args, meta))).toBe('executed');
    expect(outcome(await callTool(c, 'move_file', args, meta))).toBe('replayed');
  });

  it('passes a read-only tool through without a key', async () => {
    const c = client as AnyClient;
    const read = await callTool(c, 'read_text_file', { path: join(dir, 'b.txt') });
    expect(read.isError).toBeFalsy();
    expect(texts(read)).toContain('alpha');
    expect(read._meta?.['tool-ledger/call']).toBeUndefined();
  });

  it('stores an upstream isError result as final and replays it, even once the call would succeed', async () => {
    const c = client as AnyClient;
    const args = {
      source: join(dir, 'late.txt'),
      destination: join(dir, 'late2.txt'),
      idempotency_key: 'move-late',
    };
    const failed = await callTool(c, 'move_file', args);
    expect(failed.isError).toBe(true);
    expect(outcome(failed)).toBe('executed');
    writeFileSync(join(dir, 'late.txt'), 'now here');
    const replayed = await callTool(c, 'move_file', args);
    expect(replayed.isError).toBe(true);
    expect(outcome(replayed)).toBe('replayed');
    expect(replayed.content.slice(1)).toEqual(failed.content);
    expect(existsSync(join(dir, 'late2.txt'))).toBe(false);
  });

  it('runs parallel duplicates once', async () => {
    const c = client as AnyClient;
    writeFileSync(join(dir, 'p.txt'), 'parallel');
    const args = {
      source: join(dir, 'p.txt'),
      destination: join(dir, 'p2.txt'),
      idempotency_key: 'move-parallel',
    };
    const results = await Promise.all(Array.from({ length: 5 }, () => callTool(c, 'move_file', args)));
    expect(results.every((r) => !r.isError)).toBe(true);
    expect(results.map(outcome).sort()).toEqual(['executed', 'replayed', 'replayed', 'replayed', 'replayed']);
    expect(readFileSync(join(dir, 'p2.txt'), 'utf8')).toBe('parallel');
    const rows = await db.sql<{ attempt: number; status: string }>(
      `SELECT attempt, status FROM "${schema}".tool_runs WHERE tool_name = 'move_file' AND idempotency_key = 'move-parallel'`,
    );
    expect(rows).toEqual([expect.objectContaining({ status: 'succeeded' })]);
  });

  it('still replays from a new gateway process (the ledger is durable)', async () => {
    await client?.close();
    client = undefined;
    const c = await connect();
    const again = await callTool(c, 'move_file', {
      source: join(dir, 'a.txt'),
      destination: join(dir, 'b.txt'),
      idempotency_key: 'move-a-b',
    });
    expect(again.isError).toBeFalsy();
    expect(outcome(again)).toBe('replayed');
    expect(readFileSync(join(dir, 'b.txt'), 'utf8')).toBe('alpha');
  });
});
