// A small loopback load balancer for the fleet tests: each request without an MCP session goes to the next
// replica in turn (one that refuses the connection is skipped, as a balancer's health check would); a request of
// a session goes to the replica that opened it (the session-based revision keeps its session in that process).
// Bodies are buffered: MCP requests are small, and a replica that refuses a connection never saw the body.
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RoundRobinProxy {
  readonly url: URL;
  /** Which replica each new session went to, by index, in order. */
  readonly placements: number[];
  close(): Promise<void>;
}

function forward(
  target: URL,
  req: IncomingMessage,
  body: Buffer,
): Promise<{ status: number; headers: IncomingMessage['headers']; stream: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const out = request(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: { ...req.headers, host: target.host }, agent: false },
      (res) => resolve({ status: res.statusCode ?? 502, headers: res.headers, stream: res }),
    );
    out.on('error', reject);
    out.end(body);
  });
}

export async function roundRobinProxy(targets: readonly URL[]): Promise<RoundRobinProxy> {
  let next = 0;
  const bySession = new Map<string, number>();
  const placements: number[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const session = req.headers['mcp-session-id'];
    const pinned = typeof session === 'string' ? bySession.get(session) : undefined;
    const order = pinned !== undefined ? [pinned] : targets.map((_, i) => (next + i) % targets.length);
    if (pinned === undefined) next = (next + 1) % targets.length;
    for (const index of order) {
      try {
        const answer = await forward(targets[index] as URL, req, body);
        const opened = answer.headers['mcp-session-id'];
        if (typeof opened === 'string' && !bySession.has(opened)) {
          bySession.set(opened, index);
          placements.push(index);
        }
        res.writeHead(answer.status, answer.headers);
        answer.stream.pipe(res);
        // A replica that dies mid-answer breaks the client's response too, as a balancer would.
        answer.stream.on('error', () => res.destroy());
        answer.stream.on('aborted', () => res.destroy());
        answer.stream.socket?.on('close', () => {
          if (!answer.stream.complete) res.destroy();
        });
        res.on('close', () => answer.stream.destroy());
        return;
      } catch {
        // Connection refused (a replica that is down): the next one, for requests of no session.
      }
    }
    res.writeHead(502, { 'content-type': 'text/plain' });
    res.end('no replica answered');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: new URL(`http://127.0.0.1:${port}${targets[0]?.pathname ?? '/mcp'}`),
    placements,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
