import { NotSentError, type UpstreamRequests, UpstreamRpcError } from './upstream.js';

// Liveness of an HTTP upstream while calls wait for it: one that dies leaves no closed pipe behind (a stdio
// upstream does, so it is not pinged), only a broken response stream (checked at once) or silence (checked every
// interval). A ping that cannot be sent means the upstream is gone; so do MAX_PING_MISSES unanswered pings in a
// row (one miss may be a server busy for a moment). The calls in flight then end as OUTCOME_UNKNOWN instead of
// waiting for their tool timeout.
const PING_TIMEOUT_MS = 5_000;
const PING_INTERVAL_MS = 15_000;
const MAX_PING_MISSES = 3;

/** Pings one session's upstream, one check at a time, and reports it gone when nobody answers. */
export class UpstreamLiveness {
  #checking: Promise<void> | undefined;
  #pinger: NodeJS.Timeout | undefined;
  #misses = 0;

  constructor(
    private readonly requests: UpstreamRequests,
    private readonly session: {
      readonly log: (line: string) => void;
      /** Whether the session is closing: then a failed ping says nothing. */
      readonly closing: () => boolean;
      /** The upstream is gone: end what waits for it. */
      readonly gone: () => Promise<void>;
    },
  ) {}

  /** Checks every interval while `waiting()` says something waits for the upstream. */
  start(waiting: () => boolean): void {
    this.#pinger = setInterval(() => {
      if (waiting()) void this.check();
    }, PING_INTERVAL_MS);
    this.#pinger.unref?.();
  }

  stop(): void {
    clearInterval(this.#pinger);
  }

  /** Pings the upstream (one check at a time); if nobody answers, the upstream is treated as gone. */
  check(): Promise<void> {
    this.#checking ??= (async () => {
      try {
        await this.requests.request('ping', {}, { timeoutMs: PING_TIMEOUT_MS });
        this.#misses = 0;
      } catch (error) {
        // Any JSON-RPC answer, even an error, shows the upstream is there.
        if (error instanceof UpstreamRpcError) this.#misses = 0;
        if (error instanceof UpstreamRpcError || this.session.closing()) return;
        if (!(error instanceof NotSentError) && ++this.#misses < MAX_PING_MISSES) return;
        const why = error instanceof NotSentError ? 'cannot be reached' : 'does not answer a ping';
        this.session.log(
          `tool-ledger gateway: the upstream MCP server ${why} (${(error as Error).message}); the calls in flight end with an unknown outcome.`,
        );
        await this.session.gone();
      }
    })().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }
}
