// The MCP Inspector's CLI mode (@modelcontextprotocol/inspector --cli), a client the gateway did not choose,
// against the gateway in front of the filesystem server: over stdio (the Inspector spawns the gateway) and over
// Streamable HTTP. The Inspector 2.12 declares Node >= 22.19 in its engines (npm only warns); its CLI mode runs
// on the Node 20 this repository supports, which is what these tests show.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type Child,
  FILESYSTEM_SERVER,
  gatewayCommand,
  gatewaySuite,
  httpGateway,
  passwordFile,
  ROOT,
  tempDir,
} from './support.js';

const run = promisify(execFile);
const INSPECTOR = join(ROOT, 'node_modules/.bin/mcp-inspector');
const suite = gatewaySuite('insp');
const dir = tempDir('insp');
let http: Child & { url: URL };

beforeAll(async () => {
  http = await suite.child(
    httpGateway([...suite.ledgerArgs(), '--', process.execPath, FILESYSTEM_SERVER, dir]),
  );
});

const TARGETS = {
  stdio: () => {
    const { command, args } = gatewayCommand([
      ...suite.ledgerArgs(),
      '--',
      process.execPath,
      FILESYSTEM_SERVER,
      dir,
    ]);
    // The Inspector hands the gateway it spawns only the variables given with -e: the password, when the test
    // database has one, travels as a password file (a value given with -e would show in ps).
    const passfile = passwordFile();
    return [...(passfile ? ['-e', `PGPASSFILE=${passfile}`] : []), '--', command, ...args];
  },
  'Streamable HTTP': () => ['--transport', 'http', '--', http.url.href],
} as const;

async function inspect(
  target: keyof typeof TARGETS,
  args: readonly string[],
): Promise<Record<string, unknown>> {
  const { stdout } = await run(INSPECTOR, ['--cli', ...args, ...TARGETS[target]()], {
    cwd: ROOT,
    timeout: 60_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe.each(Object.keys(TARGETS) as (keyof typeof TARGETS)[])('MCP Inspector CLI over %s', (target) => {
  const tag = target === 'stdio' ? 'stdio' : 'http';

  it('lists move_file with a required idempotency_key', async () => {
    const listed = (await inspect(target, ['--method', 'tools/list'])) as {
      tools: Array<{ name: string; inputSchema: { required?: string[] } }>;
    };
    expect(listed.tools.find((t) => t.name === 'move_file')?.inputSchema.required).toContain(
      'idempotency_key',
    );
  });

  it('replays a repeated move_file, one Inspector process per call', async () => {
    writeFileSync(join(dir, `${tag}.txt`), tag);
    const call = [
      '--method',
      'tools/call',
      '--tool-name',
      'move_file',
      '--tool-arg',
      `source=${join(dir, `${tag}.txt`)}`,
      `destination=${join(dir, `${tag}-moved.txt`)}`,
      `idempotency_key=inspector-${tag}`,
    ];
    const first = await inspect(target, call);
    expect(first._meta).toMatchObject({ 'tool-ledger/call': { outcome: 'executed' } });
    const again = await inspect(target, call);
    expect(again._meta).toMatchObject({ 'tool-ledger/call': { outcome: 'replayed' } });
    expect(again.isError).toBeFalsy();
    expect(existsSync(join(dir, `${tag}.txt`))).toBe(false);
    expect(readFileSync(join(dir, `${tag}-moved.txt`), 'utf8')).toBe(tag);
  });
});
