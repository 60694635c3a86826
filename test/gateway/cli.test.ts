// The gateway's command line: help a newcomer can read, and refusals that say what to do. Also the bearer-token
// check the HTTP mode relies on.
import { execFile } from 'node:child_process';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { verifyToken } from '../../src/auth/jwt.js';
import { eventually, FILESYSTEM_SERVER, gatewayCommand, ROOT, tempDir } from './support.js';

const run = promisify(execFile);

async function cli(args: readonly string[], env: Record<string, string> = {}) {
  const { command, args: full } = gatewayCommand(args);
  try {
    const { stdout, stderr } = await run(command, full, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('tool-ledger gateway command line', () => {
  it('explains itself with --help', async () => {
    const { code, stdout } = await cli(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^tool-ledger gateway: put replay safety and telemetry in front of any MCP server/,
    );
    expect(stdout).toContain('tool-ledger gateway [options] -- <server command> [args...]');
    expect(stdout).toContain('--upstream URL --listen HOST:PORT');
    expect(stdout).toContain('idempotency_key');
  });

  it('refuses to start without a server, and without a durable ledger', async () => {
    const none = await cli(['--database-url', 'postgres://x@127.0.0.1/db']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/needs the MCP server to stand in front of/);
    const noDb = await cli(['--', 'node', 'server.js'], { DATABASE_URL: '' });
    expect(noDb.code).toBe(2);
    expect(noDb.stderr).toMatch(/needs a durable ledger: set DATABASE_URL/);
    const password = await cli(['--database-url', 'postgres://u:secret@h/db', '--', 'node', 's.js']);
    expect(password.code).toBe(2);
    expect(password.stderr).toMatch(/carries a password/);
    // A multi-host URL, which WHATWG URL cannot read, is checked the same way.
    const hostList = await cli(['--database-url', 'postgres://u:secret@a:1,b:2/db', '--', 'node', 's.js']);
    expect(hostList.code).toBe(2);
    expect(hostList.stderr).toMatch(/carries a password/);
    const header = await cli([
      '--database-url',
      'postgres://u@h/db',
      '--tenant-header',
      'x-t',
      '--',
      'node',
      's.js',
    ]);
    expect(header.code).toBe(2);
    expect(header.stderr).toMatch(/applies to --listen \(HTTP\) only/);
  });
});

describe('tool-ledger gateway lifetime over stdio', () => {
  it('exits, and stops its server, when the client closes stdin', async () => {
    const { spawn } = await import('node:child_process');
    const { command, args } = gatewayCommand([
      '--pglite',
      tempDir('eof'),
      '--',
      process.execPath,
      FILESYSTEM_SERVER,
      tempDir('eof-files'),
    ]);
    const child = spawn(command, args, { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += String(chunk);
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    // The filesystem server announces itself on stderr once the gateway has spawned it.
    await eventually(() => /running on stdio/.test(stderr) || child.exitCode !== null, 1200, 50);
    child.stdin.end();
    expect(await exited).toBe(0);
  });
});

describe('bearer token verification', () => {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const hs256 = (claims: Record<string, unknown>, secret: string, alg = 'HS256') => {
    const body = `${part({ alg, typ: 'JWT' })}.${part(claims)}`;
    return `${body}.${createHmac('sha256', secret).update(body).digest('base64url')}`;
  };

  it('accepts a good HS256 token and refuses a bad signature, expiry, audience and alg none', () => {
    const now = 1_800_000_000;
    expect(verifyToken(hs256({ sub: 'u', exp: now + 60 }, 's'), { secret: 's' }, now)).toEqual({
      claims: { sub: 'u', exp: now + 60 },
    });
    expect(verifyToken(hs256({ sub: 'u' }, 'other'), { secret: 's' }, now)).toEqual({
      refused: 'bad signature',
    });
    expect(verifyToken(hs256({ exp: now - 1 }, 's'), { secret: 's' }, now)).toEqual({ refused: 'expired' });
    expect(verifyToken(hs256({ aud: 'x' }, 's'), { secret: 's', audience: 'gw' }, now)).toEqual({
      refused: 'wrong audience',
    });
    const unsigned = `${part({ alg: 'none' })}.${part({ sub: 'u' })}.`;
    expect('refused' in verifyToken(unsigned, { secret: 's' }, now)).toBe(true);
  });

  it('verifies ES256 and RS256 with a public key, and never takes the algorithm from the token', () => {
    for (const type of ['ec', 'rsa'] as const) {
      const { privateKey, publicKey } =
        type === 'ec'
          ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
          : generateKeyPairSync('rsa', { modulusLength: 2048 });
      const alg = type === 'ec' ? 'ES256' : 'RS256';
      const body = `${part({ alg })}.${part({ sub: 'k' })}`;
      const signature = sign(
        'sha256',
        Buffer.from(body),
        type === 'ec' ? { key: privateKey, dsaEncoding: 'ieee-p1363' } : privateKey,
      ).toString('base64url');
      const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
      expect(verifyToken(`${body}.${signature}`, { publicKey: pem })).toEqual({ claims: { sub: 'k' } });
      // An HS256 token "signed" with the public key text must not pass.
      expect('refused' in verifyToken(hs256({ sub: 'k' }, pem), { publicKey: pem })).toBe(true);
    }
  });
});
