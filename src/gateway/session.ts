import type { GatewaySettings } from '../config/gateway.js';
import type { Ledger } from '../create-ledger.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';
import { type CallTransport, handleToolCall } from './call.js';
import type { ToolCatalog } from './catalog.js';
import { ClientApprovals } from './client-requests.js';
import type { Gate } from './gate.js';
import { gatewayLedgerToolFor } from './ledger-tools.js';
import { ToolLookup } from './tool-lookup.js';
import type { GatewayIdentity, GatewayTransport, JsonRpcMessage, TransportExtra } from './types.js';
import { UpstreamRequests } from './upstream.js';
import { UpstreamLiveness } from './upstream-liveness.js';

/** What every session of one gateway shares: the ledger and its tools, the catalog and the settings. */
export interface SessionShared {
  readonly ledger: Ledger;
  readonly catalog: ToolCatalog;
  readonly keyField: string;
  readonly network: 'pipe' | 'tcp';
  /** Whether the upstream is reached over HTTP, whose death only pings reveal. */
  readonly pingUpstream: boolean;
  readonly log: (line: string) => void;
  /** Admits each tool call: access rules and per-tenant limits. */
  readonly gate: Gate;
  /** The resolved timings: ping, drain and the default call timeout. */
  readonly settings: GatewaySettings;
  /** Starts the session's upstream transport; a command that cannot be spawned is an error that says so. */
  readonly startUpstream: (transport: GatewayTransport) => Promise<void>;
  /** The identity of a call from what its transport says. */
  readonly identity: (extra: TransportExtra | undefined) => GatewayIdentity;
}

/**
 * One client connection relayed to one upstream connection. Every message passes through as it is, except:
 * `tools/list` answers (mutating tools gain the key argument), `tools/call` requests (answered by the ledger or
 * forwarded under an id of the gateway's own), cancellations of those calls, and `tools/list_changed`, which
 * makes the gateway read the annotations again.
 */
export class GatewaySession {
  readonly requests: UpstreamRequests;
  readonly #listRequests = new Map<string | number, number>();
  readonly #calls = new Map<string | number, AbortController>();
  readonly #progress = new Map<string | number, string | number>();
  #inFlight = new Set<Promise<void>>();
  #protocolVersion: string | undefined;
  #initializeId: string | number | undefined;
  /** Approval forms the gateway itself sends the client, for tools with `approval`. */
  readonly #approvals: ClientApprovals;
  #closing = false;
  /** Client requests relayed upstream as they are, still unanswered: answered with an error if the upstream goes. */
  readonly #relayed = new Set<string | number>();
  readonly #tools: ToolLookup;
  /** Set for an upstream reached over HTTP, whose death only pings reveal. */
  readonly #liveness: UpstreamLiveness | undefined;
  readonly closed: Promise<void>;
  #resolveClosed!: () => void;

  constructor(
    private readonly shared: SessionShared,
    private readonly downstream: GatewayTransport,
    private readonly upstream: GatewayTransport,
  ) {
    this.requests = new UpstreamRequests(upstream, shared.log);
    this.#tools = new ToolLookup(shared.catalog, this.requests, shared.log);
    this.#approvals = new ClientApprovals(
      shared.ledger,
      shared.settings.approvalFormTimeoutMs,
      (message, related) => downstream.send(message, { relatedRequestId: related }),
    );
    this.#liveness = shared.pingUpstream
      ? new UpstreamLiveness(this.requests, shared.settings, {
          log: shared.log,
          closing: () => this.#closing,
          gone: () => this.#upstreamClosed(),
        })
      : undefined;
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
  }

  /** Whether a call or a relayed request waits for the upstream: such a session is not idle. */
  get busy(): boolean {
    return this.#inFlight.size > 0 || this.#relayed.size > 0;
  }

  async start(): Promise<void> {
    this.upstream.onmessage = (message) => this.#fromUpstream(message);
    this.upstream.onclose = () => void this.#upstreamClosed();
    this.upstream.onerror = (error) => {
      this.shared.log(`tool-ledger gateway: upstream: ${error.message}`);
      // A broken stream may be the upstream's death; a ping tells.
      if (!this.#closing) void this.#liveness?.check();
    };
    this.downstream.onmessage = (message, extra) => this.#fromClient(message, extra);
    this.downstream.onclose = () => void this.close();
    this.downstream.onerror = (error) => this.shared.log(`tool-ledger gateway: client: ${error.message}`);
    await this.shared.startUpstream(this.upstream);
    await this.downstream.start();
    this.#liveness?.start(() => this.requests.pending > 0 || this.#relayed.size > 0);
  }

  /** Sends without throwing (a failure is logged); settles once the transport has taken the message. */
  #send(
    target: GatewayTransport,
    message: JsonRpcMessage,
    relatedRequestId?: string | number,
  ): Promise<void> {
    const options = relatedRequestId === undefined ? undefined : { relatedRequestId };
    return target.send(message, options).catch((error: unknown) => {
      // A request's stream may have ended (its answer went out): notifications then take the standalone stream.
      if (relatedRequestId !== undefined && message.id === undefined) {
        return target.send(message).catch(() => {});
      }
      this.shared.log(
        `tool-ledger gateway: could not relay ${message.method ?? 'a response'}: ${(error as Error).message}`,
      );
    });
  }

  #fromClient(message: JsonRpcMessage, extra: TransportExtra | undefined): void {
    if (this.#approvals.take(message)) return;
    if (message.method !== undefined && message.id !== undefined) {
      if (message.method === 'tools/call') {
        this.#track(this.#call(message, extra));
        return;
      }
      if (message.method === 'tools/list') this.#listRequests.set(message.id, this.shared.catalog.generation);
      if (message.method === 'initialize') this.#initializeId = message.id;
      this.#rememberProgress(message);
      this.#relay(message);
      return;
    } else if (message.method === 'notifications/cancelled') {
      const requestId = message.params?.requestId;
      const call =
        typeof requestId === 'string' || typeof requestId === 'number'
          ? this.#calls.get(requestId)
          : undefined;
      if (call) {
        // The gateway forwarded this call under its own id; its abort sends the cancellation with that id.
        call.abort();
        return;
      }
    }
    void this.#send(this.upstream, message);
  }

  /** Relays a client request as it is; one that cannot reach the upstream is answered with an error at once. */
  #relay(message: JsonRpcMessage): void {
    const id = message.id as string | number;
    const fail = (why: string) => {
      this.#relayed.delete(id);
      this.#listRequests.delete(id);
      this.#forgetProgress(id);
      // Tracked, so a closing session answers it before it closes the client side.
      this.#track(
        this.#send(this.downstream, {
          jsonrpc: '2.0',
          id,
          error: { code: -32603, message: `tool-ledger gateway: ${message.method} ${why}` },
        }),
      );
    };
    if (this.requests.closed || this.#closing) {
      fail('could not be sent: the upstream MCP server is not connected.');
      return;
    }
    this.#relayed.add(id);
    this.upstream.send(message).catch((error: unknown) => {
      if (!this.#relayed.has(id)) return;
      fail(`could not be sent to the upstream MCP server (${(error as Error).message}).`);
      if (!this.#closing) void this.#liveness?.check();
    });
  }

  /** Progress notifications name the client's token: they go back on the stream of the request that set it. */
  #rememberProgress(message: JsonRpcMessage): void {
    const meta = isRecord(message.params?._meta) ? message.params._meta : undefined;
    const token = meta?.progressToken;
    if ((typeof token === 'string' || typeof token === 'number') && message.id !== undefined) {
      this.#progress.set(token, message.id);
    }
  }

  #fromUpstream(message: JsonRpcMessage): void {
    if (this.requests.take(message)) return;
    if (message.method === undefined && message.id !== undefined) {
      const id = message.id;
      const generation = this.#listRequests.get(id);
      if (generation !== undefined) {
        this.#listRequests.delete(id);
        if (isRecord(message.result)) {
          message = { ...message, result: this.shared.catalog.rewriteList(message.result, generation) };
        }
      }
      if (id === this.#initializeId && isRecord(message.result)) {
        const version = message.result.protocolVersion;
        if (typeof version === 'string') this.#protocolVersion = version;
      }
      this.#forgetProgress(id);
      this.#relayed.delete(id);
      void this.#send(this.downstream, message);
      return;
    }
    if (message.method === 'notifications/tools/list_changed') this.shared.catalog.invalidate();
    let related: string | number | undefined;
    if (message.method === 'notifications/progress') {
      const token = message.params?.progressToken;
      if (typeof token === 'string' || typeof token === 'number') related = this.#progress.get(token);
    }
    void this.#send(this.downstream, message, related);
  }

  #forgetProgress(requestId: string | number): void {
    for (const [token, id] of this.#progress) if (id === requestId) this.#progress.delete(token);
  }

  #track(work: Promise<void>): void {
    this.#inFlight.add(work);
    void work.finally(() => this.#inFlight.delete(work));
  }

  async #call(message: JsonRpcMessage, extra: TransportExtra | undefined): Promise<void> {
    const id = message.id as string | number;
    const params = isRecord(message.params) ? message.params : {};
    const name = params.name;
    if (typeof name !== 'string') {
      await this.#send(this.downstream, {
        jsonrpc: '2.0',
        id,
        error: { code: -32602, message: 'tools/call needs params.name, the name of the tool to call.' },
      });
      return;
    }
    this.#rememberProgress(message);
    const abort = new AbortController();
    this.#calls.set(id, abort);
    try {
      const facts = await this.#tools.facts(name);
      const transport: CallTransport = {
        requestId: id,
        sessionId: this.downstream.sessionId,
        protocolVersion: this.#protocolVersion,
        network: this.shared.network,
      };
      const answer = await handleToolCall({
        params,
        facts,
        ledgerTool: (f) => gatewayLedgerToolFor(this.shared.ledger, f),
        upstream: this.requests,
        identity: this.shared.identity(extra),
        gate: this.shared.gate,
        keyField: this.shared.keyField,
        defaultTimeoutMs: this.shared.settings.upstreamCallTimeoutMs,
        transport,
        signal: abort.signal,
        approval: this.#approvals.forCall(id, abort.signal),
      });
      // A cancelled request gets no answer (MCP: the receiver of a cancellation does not respond).
      if (abort.signal.aborted) return;
      // Awaited: the call is in flight until its answer is with the client's transport, so close() waits for it.
      await this.#send(this.downstream, { jsonrpc: '2.0', id, ...answer } as JsonRpcMessage);
    } catch (error) {
      await this.#send(this.downstream, {
        jsonrpc: '2.0',
        id,
        error: { code: -32603, message: `tool-ledger gateway: ${(error as Error).message}` },
      });
    } finally {
      this.#calls.delete(id);
      this.#forgetProgress(id);
    }
  }

  async #upstreamClosed(): Promise<void> {
    if (!this.#closing)
      this.shared.log('tool-ledger gateway: the upstream MCP server closed the connection.');
    this.requests.closeAll();
    for (const id of [...this.#relayed]) {
      this.#relayed.delete(id);
      this.#track(
        this.#send(this.downstream, {
          jsonrpc: '2.0',
          id,
          error: {
            code: -32603,
            message: 'tool-ledger gateway: the upstream MCP server went away before it answered.',
          },
        }),
      );
    }
    await this.close();
  }

  /**
   * Answers the calls in flight (bounded), then closes both sides. Calls the client sends while the session
   * closes are answered too (they cannot reach the upstream, so they fail as retryable): the client side closes
   * only once nothing is in flight, or at the drain deadline.
   */
  async close(): Promise<void> {
    if (this.#closing) return this.closed;
    this.#closing = true;
    this.#liveness?.stop();
    this.#approvals.closeAll();
    const deadline = Date.now() + this.shared.settings.drainTimeoutMs;
    await this.#drain(deadline);
    this.requests.closeAll();
    await this.upstream.close().catch(() => {});
    await this.#drain(deadline);
    await this.downstream.close().catch(() => {});
    this.#resolveClosed();
    return this.closed;
  }

  /** Waits until no work is in flight, including work that starts meanwhile, or until the deadline. */
  async #drain(deadline: number): Promise<void> {
    // Bounded in count as well as time: each round waits for the work in flight when it began.
    for (let round = 0; round < 10_000 && this.#inFlight.size > 0; round++) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.#inFlight]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, left);
        }),
      ]);
      clearTimeout(timer);
    }
  }
}
