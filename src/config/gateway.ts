import { checkKnown, invalid, MAX_TIMER_SECONDS } from './limits.js';

// The gateway's timings and bounds: documented once here, resolved once (resolveGatewaySettings) and frozen. The
// gateway (src/gateway/) reads only the resolved settings; docs/gateway.md's table of options follows this file.

/** How the gateway times its upstream, its client sessions and its shutdown. Every field is optional. */
export interface GatewaySettingsOptions {
  /**
   * How often a session pings an HTTP upstream while something waits for it. An upstream that dies leaves no
   * closed pipe behind, only silence. 0 turns the periodic ping off (a broken stream is still checked at once).
   * @default 15000 (15 seconds)
   */
  readonly upstreamPingIntervalMs?: number;
  /**
   * How long one ping may go unanswered before it counts as a miss.
   * @default 5000 (5 seconds)
   */
  readonly upstreamPingTimeoutMs?: number;
  /**
   * Unanswered pings in a row after which the upstream counts as gone and the calls in flight end as
   * `OUTCOME_UNKNOWN` (one miss may be a server busy for a moment).
   * @default 3
   */
  readonly upstreamPingMisses?: number;
  /**
   * How long a tool call waits for the upstream's answer when its tool sets no `timeoutSeconds`. Past it the
   * outcome is unknown: the request was sent.
   * @default 60000 (60 seconds)
   */
  readonly upstreamCallTimeoutMs?: number;
  /**
   * How long the gateway waits for the upstream to start and answer its first request (the start-up check, and
   * the connection the sessionless revision shares). A command that cannot be spawned fails at once. Generous by
   * default: `npx -y` may download the server on its first start.
   * @default 30000 (30 seconds)
   */
  readonly upstreamConnectTimeoutMs?: number;
  /**
   * For HTTP sessions of the session-based revision: a client session with no request for this long, and no call
   * in flight, is closed with its upstream connection (or its spawned server); the client's next request gets
   * 404 and opens a new session. 0 keeps idle sessions until the client ends them. Short by default: SDK 1.x
   * clients that exit without a DELETE would otherwise keep a spawned server each.
   * @default 120000 (2 minutes)
   */
  readonly sessionIdleTimeoutMs?: number;
  /**
   * On `close()` (and SIGTERM in the CLI): how long the calls in flight may take to be answered before their
   * connections are closed anyway. A call cut off then keeps its ledger row in progress until its lease lapses;
   * a retry with the same key (on any replica) then waits, replays, or reports `OUTCOME_UNKNOWN`, never runs twice.
   * @default 15000 (15 seconds)
   */
  readonly drainTimeoutMs?: number;
  /**
   * For a tool with `approval`: how long the person at a client that declared form elicitation has to answer the
   * approval form. Past it nothing is recorded, and the call answers `APPROVAL_REQUIRED` naming its key.
   * @default 600000 (10 minutes)
   */
  readonly approvalFormTimeoutMs?: number;
  /**
   * The largest HTTP request body the gateway reads; a larger one is answered `413` before it is parsed.
   * @default 4194304 (4 MiB)
   */
  readonly maxRequestBytes?: number;
}

export type GatewaySettings = { readonly [K in keyof GatewaySettingsOptions]-?: number };

export const GATEWAY_DEFAULTS: GatewaySettings = Object.freeze({
  upstreamPingIntervalMs: 15_000,
  upstreamPingTimeoutMs: 5_000,
  upstreamPingMisses: 3,
  upstreamCallTimeoutMs: 60_000,
  upstreamConnectTimeoutMs: 30_000,
  sessionIdleTimeoutMs: 2 * 60 * 1000,
  drainTimeoutMs: 15_000,
  approvalFormTimeoutMs: 10 * 60 * 1000,
  maxRequestBytes: 4 * 1024 * 1024,
});

const KNOWN: Readonly<Record<keyof GatewaySettingsOptions, true>> = {
  upstreamPingIntervalMs: true,
  upstreamPingTimeoutMs: true,
  upstreamPingMisses: true,
  upstreamCallTimeoutMs: true,
  upstreamConnectTimeoutMs: true,
  sessionIdleTimeoutMs: true,
  drainTimeoutMs: true,
  approvalFormTimeoutMs: true,
  maxRequestBytes: true,
};

const MAX_TIMER_MS = MAX_TIMER_SECONDS * 1000;

/** The smallest value of each setting: 0 where 0 means "off" or "never", 1 where a bound of 0 makes no sense. */
const BOUNDS: Readonly<
  Record<keyof GatewaySettingsOptions, readonly [min: number, max: number, zero: string]>
> = {
  upstreamPingIntervalMs: [0, MAX_TIMER_MS, '0 for no periodic ping'],
  upstreamPingTimeoutMs: [1, MAX_TIMER_MS, ''],
  upstreamPingMisses: [1, 1000, ''],
  upstreamCallTimeoutMs: [1, MAX_TIMER_MS, ''],
  upstreamConnectTimeoutMs: [1, MAX_TIMER_MS, ''],
  sessionIdleTimeoutMs: [0, MAX_TIMER_MS, '0 for never'],
  drainTimeoutMs: [0, MAX_TIMER_MS, '0 to close at once'],
  approvalFormTimeoutMs: [1, MAX_TIMER_MS, ''],
  maxRequestBytes: [1024, 1024 * 1024 * 1024, ''],
};

function check(name: keyof GatewaySettingsOptions, value: number | undefined): number {
  if (value === undefined) return GATEWAY_DEFAULTS[name];
  const [min, max, zero] = BOUNDS[name];
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const unit =
      name === 'maxRequestBytes' ? 'bytes' : name === 'upstreamPingMisses' ? 'pings' : 'milliseconds';
    throw invalid(
      `${name} must be a whole number of ${unit} from ${min}${zero ? ` (${zero})` : ''} to ${max}, got ${String(value)}.`,
    );
  }
  return value;
}

/** The gateway's settings with defaults resolved and every value checked; frozen. */
export function resolveGatewaySettings(options: GatewaySettingsOptions = {}): GatewaySettings {
  checkKnown('The gateway settings', options, KNOWN);
  const resolved = {} as Record<keyof GatewaySettingsOptions, number>;
  for (const name of Object.keys(KNOWN) as (keyof GatewaySettingsOptions)[]) {
    resolved[name] = check(name, options[name]);
  }
  return Object.freeze(resolved);
}

/** One setting resolved on its own (for the CLI's usage checks and tests). */
export function resolveSessionIdleTimeoutMs(value: number | undefined): number {
  return check('sessionIdleTimeoutMs', value);
}
