// A tool the gateway's --config file marks `approval: "required"`, in front of the reference filesystem server
// from npm, over stdio: a real MCP client (SDK 1.x) that declared elicitation answers the gateway's form; one
// that did not gets a tool error naming the key, and runs once an operator approved.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLedger, type Ledger } from '../../src/index.js';
import {
  callTool,
  databaseUrl,
  errorCode,
  filesystemGatewayArgs,
  gatewayCommand,
  gatewaySuite,
  outcome,
  ROOT,
  tempDir,
  texts,
} from './support.js';

const suite = gatewaySuite('approval');
const { schema } = suite;
const dir = tempDir('approval');
const config = join(tempDir('approval-config'), 'gateway.json');
writeFileSync(config, JSON.stringify({ tools: { write_file: { approval: 'required' } } }));

const asked: Array<{ message: string; mode?: string }> = [];
let reply: () => ElicitResult = () => ({ action: 'cancel' });
let operator: Ledger;

async function connect(elicitation: boolean): Promise<Client> {
  const spawn = gatewayCommand(['--config', config, ...filesystemGatewayArgs(schema, dir)]);
  const client = new Client(
    { name: 'desk-app', version: '1.0.0' },
    { capabilities: elicitation ? { elicitation: { form: {} } } : {} },
  );
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params as { message: string; mode?: string });
      return reply();
    });
  }
  await client.connect(
    new StdioClientTransport({
      ...spawn,
      cwd: ROOT,
      stderr: 'pipe',
      env: process.env as Record<string, string>,
    }),
  );
  return suite.client(client);
}

let withForms: Client;
let withoutForms: Client;

beforeAll(async () => {
  withForms = await connect(true);
  withoutForms = await connect(false);
  // The ledger as an operator's process opens it, on the gateway's schema (what `tool-ledger approve` does).
  operator = await createLedger({ connectionString: databaseUrl(), schema, telemetry: false });
});

afterAll(async () => {
  await operator?.close();
});

beforeEach(() => {
  asked.length = 0;
});

const write = (name: string, key: string, content = 'refund approved') => ({
  path: join(dir, name),
  content,
  idempotency_key: key,
});

describe('gateway approvals (config file, filesystem server, stdio)', () => {
  it('asks the client in a form; an approved write reaches the server once', async () => {
    reply = () => ({ action: 'accept', content: { decision: 'approve', reason: 'checked' } });
    const first = await callTool(withForms, 'write_file', write('a.txt', 'write-a'));
    expect(first.isError).toBeFalsy();
    // The outcome of a call that ran once a person approved it.
    expect(outcome(first)).toBe('approved');
    expect(first._meta?.['tool-ledger/call']).toMatchObject({ replayed: false });
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('refund approved');
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ mode: 'form', message: expect.stringContaining('write_file') });

    const again = await callTool(withForms, 'write_file', write('a.txt', 'write-a'));
    expect(outcome(again)).toBe('replayed');
    expect(asked).toHaveLength(1);
  });

  it('a declined write never reaches the server', async () => {
    reply = () => ({ action: 'accept', content: { decision: 'decline', reason: 'wrong file' } });
    const result = await callTool(withForms, 'write_file', write('b.txt', 'write-b'));
    expect(result.isError).toBe(true);
    expect(errorCode(result)).toBe('APPROVAL_DECLINED');
    expect(existsSync(join(dir, 'b.txt'))).toBe(false);
  });

  it('a client without elicitation is told the call awaits approval and its key; approved, it runs', async () => {
    const result = await callTool(withoutForms, 'write_file', write('c.txt', 'write-c'));
    expect(result.isError).toBe(true);
    expect(errorCode(result)).toBe('APPROVAL_REQUIRED');
    expect(texts(result)).toMatch(
      /a person must approve this request first, and it is now waiting for them under the key "write-c"/,
    );
    expect(existsSync(join(dir, 'c.txt'))).toBe(false);

    await operator.approve({ tenant: 'acme', tool: 'write_file', key: 'write-c', by: 'ops' });
    const after = await callTool(withoutForms, 'write_file', write('c.txt', 'write-c'));
    expect(outcome(after)).toBe('approved');
    expect(readFileSync(join(dir, 'c.txt'), 'utf8')).toBe('refund approved');
    // Read-only tools pass through without asking anyone.
    const read = await callTool(withForms, 'read_text_file', { path: join(dir, 'c.txt') });
    expect(read.isError).toBeFalsy();
    expect(asked).toEqual([]);
  });
});
