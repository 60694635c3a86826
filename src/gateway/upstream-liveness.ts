import type { GatewaySettings } from '../config/gateway.js';
import { NotSentError, type UpstreamRequests, UpstreamRpcError } from './upstream.js';

// Liveness of an HTTP upstream while calls wait for it: one that dies leaves no closed pipe behind (a stdio
// upstream does, so it is not pinged), only a broken response stream (checked at once) or silence (checked every
// interval). A ping that cannot be sent means the upstream is gone; so do `upstreamPingMisses` unanswered pings in
// a row (one miss may be a server busy for a moment). The calls in flight then end as OUTCOME_UNKNOWN instead of
// waiting for their tool timeout. The timings are the gateway's settings (src/config/gateway.ts).

/** Pings one session's upstream, one check at a time, and reports it gone when nobody answers. */
export class UpstreamLiveness {
  #checking: Promise<void> | undefined;
  #pinger: NodeJS.Timeout | undefined;
  #misses = 0;

  constructor(
    private readonly requests: UpstreamRequests,
    private readonly timing: Pick<
      GatewaySettings,
      'upstreamPingIntervalMs' | 'upstreamPingTimeoutMs' | 'upstreamPingMisses'
    >,
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
    if (this.timing.upstreamPingIntervalMs === 0) return;
    this.#pinger = setInterval(() => {
      if (waiting()) void this.check();
    }, this.timing.upstreamPingIntervalMs);
    this.#pinger.unref?.();
  }

  stop(): void {
    clearInterval(this.#pinger);
  }

  /** Pings the upstream (one check at a time); if nobody answers, the upstream is treated as gone. */
  check(): Promise<void> {
    this.#checking ??= (async () => {
      try {
        await this.requests.request('ping', {}, { timeoutMs: this.timing.upstreamPingTimeoutMs });
        this.#misses = 0;
      } catch (error) {
        // Any JSON-RPC answer, even an error, shows the upstream is there.
        if (error instanceof UpstreamRpcError) this.#misses = 0;
        if (error instanceof UpstreamRpcError || this.session.closing()) return;
        if (!(error instanceof NotSentError) && ++this.#misses < this.timing.upstreamPingMisses) return;
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
