// Child processes and ports for the benches that start servers of their own (bench/gateway.mjs,
// bench/gateway-cpu.mjs).
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

/**
 * Spawns `node args` and resolves with the child and the first match of `ready` in its output (stdout or
 * stderr). Rejects if it exits first, or after 60 s without the match (the child is killed then).
 */
export function spawnReady(args, ready, env = {}) {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`not ready after 60 s:\n${output}`));
    }, 60_000);
    const seen = (chunk) => {
      output += String(chunk);
      const match = output.match(ready);
      if (match) {
        clearTimeout(timer);
        resolve({ child, match });
      }
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    child.once('exit', () => reject(new Error(`exited before it was ready:\n${output}`)));
  });
}

/** A loopback port free at the moment of asking. */
export async function freePort() {
  const probe = createServer();
  await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
