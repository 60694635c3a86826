import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

/**
 * A loopback HTTP "provider" standing in for the payment, email and ticketing APIs a mutating tool calls. It
 * records every effect, so a fault test can count per key what happened in the world, outside the ledger.
 *
 * - `POST /dedupe` dedupes by the `Idempotency-Key` header, as Stripe does: the first request with a key has the
 *   effect and fixes the response; every later request with that key gets the same response and no new effect.
 * - `POST /plain` has an effect on every request (an email sent twice is sent twice). It records the `X-Ref`
 *   header, so `GET /lookup?ref=R` can say afterwards whether an effect with that reference happened (the kind of
 *   search a lookup `onUnknown` does at a real provider).
 *
 * The effect happens when the request arrives, before the answer leaves: a caller killed while waiting for the
 * answer has acted without knowing it, which is the case an unknown outcome is about. `X-Hold: 1` keeps the
 * answer back until the caller goes away (or the provider closes), so a test can kill a worker inside the call.
 * Requests carry `{ tenant, ledgerKey, step }` as JSON, which name the effect for the counts.
 */
export interface ProviderEffect {
  readonly endpoint: 'dedupe' | 'plain';
  readonly tenant: string;
  readonly ledgerKey: string;
  readonly step: string;
  /** The `Idempotency-Key` (dedupe) or `X-Ref` (plain) the request carried: the step's provider key. */
  readonly stepKey: string;
  readonly id: string;
}

export interface ProviderAnswer {
  readonly id: string;
  readonly tenant: string;
  readonly ledgerKey: string;
  readonly step: string;
}

export interface Provider {
  /** `http://127.0.0.1:PORT`, for this process and for child processes. */
  readonly url: string;
  /** Delay before every answer (not before the effect), so steps take a while and faults land inside them. */
  delayMs: number;
  /** Every effect, in order. */
  readonly effects: readonly ProviderEffect[];
  /** Requests per endpoint (effects or replays), to tell a replayed step (no request) from a rerun one. */
  readonly requests: { dedupe: number; plain: number; lookup: number };
  /** Keys that do not fit providers' limits (more than 255 characters, or outside `[A-Za-z0-9_-]`). */
  readonly badKeys: readonly string[];
  /** Requests (effects and replays) per `tenant/ledgerKey/step`: a replayed step sends none. */
  readonly requestsByStep: ReadonlyMap<string, number>;
  /** Held requests seen so far, as `tenant/ledgerKey/step`. */
  readonly held: readonly string[];
  /** Resolves once `count` held requests have arrived (false when `timeoutMs` passed first). */
  waitForHeld(count: number, timeoutMs: number): Promise<boolean>;
  close(): Promise<void>;
}

const KEY_FORM = /^[A-Za-z0-9_-]{1,255}$/;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      // Bounded: the test's requests are tiny, so anything large is a bug worth a 413 rather than memory.
      body += chunk;
      if (body.length > 65_536) req.destroy();
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

export async function startProvider(): Promise<Provider> {
  const effects: ProviderEffect[] = [];
  const requests = { dedupe: 0, plain: 0, lookup: 0 };
  const badKeys: string[] = [];
  const requestsByStep = new Map<string, number>();
  const held: string[] = [];
  const heldWaiters = new Set<() => void>();
  /** The answer fixed by the first request with each Idempotency-Key. */
  const byIdempotencyKey = new Map<string, ProviderAnswer>();
  /** The answer of each plain effect, by its reference, for lookups. */
  const byRef = new Map<string, ProviderAnswer>();
  const heldResponses = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const state = { delayMs: 0, closed: false };
  let next = 0;

  const send = (res: ServerResponse, status: number, body: unknown) => {
    if (res.destroyed || res.writableEnded) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const answerLater = (res: ServerResponse, body: ProviderAnswer, hold: boolean) => {
    if (hold) {
      // Never answered: the caller is killed while it waits. The socket closing ends it.
      heldResponses.add(res);
      res.on('close', () => heldResponses.delete(res));
      for (const wake of heldWaiters) wake();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      send(res, 200, body);
    }, state.delayMs);
    timers.add(timer);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/lookup') {
      requests.lookup++;
      const found = byRef.get(url.searchParams.get('ref') ?? '');
      if (found) send(res, 200, found);
      else send(res, 404, { error: 'no effect with this reference' });
      return;
    }
    if (req.method !== 'POST' || (url.pathname !== '/dedupe' && url.pathname !== '/plain')) {
      send(res, 404, { error: 'unknown endpoint' });
      return;
    }
    const endpoint = url.pathname === '/dedupe' ? 'dedupe' : 'plain';
    requests[endpoint]++;
    let parsed: { tenant?: unknown; ledgerKey?: unknown; step?: unknown };
    try {
      parsed = JSON.parse(await readBody(req)) as typeof parsed;
    } catch {
      send(res, 400, { error: 'body is not JSON' });
      return;
    }
    const { tenant, ledgerKey, step } = parsed;
    if (typeof tenant !== 'string' || typeof ledgerKey !== 'string' || typeof step !== 'string') {
      send(res, 400, { error: 'tenant, ledgerKey and step are required' });
      return;
    }
    const named = `${tenant}/${ledgerKey}/${step}`;
    requestsByStep.set(named, (requestsByStep.get(named) ?? 0) + 1);
    const header = endpoint === 'dedupe' ? 'idempotency-key' : 'x-ref';
    const stepKey = req.headers[header];
    if (typeof stepKey !== 'string' || !KEY_FORM.test(stepKey)) {
      badKeys.push(String(stepKey));
      send(res, 400, { error: `${header} must be 1-255 characters of [A-Za-z0-9_-]` });
      return;
    }
    const hold = req.headers['x-hold'] === '1';
    if (hold) held.push(named);
    if (endpoint === 'dedupe') {
      const earlier = byIdempotencyKey.get(stepKey);
      if (earlier) {
        answerLater(res, earlier, hold);
        return;
      }
    }
    const answer: ProviderAnswer = { id: `${endpoint}_${++next}`, tenant, ledgerKey, step };
    effects.push({ endpoint, tenant, ledgerKey, step, stepKey, id: answer.id });
    if (endpoint === 'dedupe') byIdempotencyKey.set(stepKey, answer);
    else byRef.set(stepKey, answer);
    answerLater(res, answer, hold);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => send(res, 500, { error: String(error) }));
  });
  // Callers keep connections alive between steps; a closed provider must not wait for them.
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    url: `http://127.0.0.1:${port}`,
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms) {
      state.delayMs = ms;
    },
    effects,
    requests,
    badKeys,
    requestsByStep,
    held,
    async waitForHeld(count, timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (held.length < count && Date.now() < until && !state.closed) {
        await new Promise<void>((resolve) => {
          const wake = () => {
            heldWaiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, Math.max(1, Math.min(250, until - Date.now())));
          heldWaiters.add(wake);
        });
      }
      return held.length >= count;
    },
    async close() {
      state.closed = true;
      for (const timer of timers) clearTimeout(timer);
      for (const res of heldResponses) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
