import { OutcomeUnknownError } from '../contract/errors.js';
import type { GatewayTransport, JsonRpcMessage } from './types.js';

/** The request never left the gateway: nothing happened upstream, so a retry with the same key may run it. */
export class NotSentError extends Error {
  override readonly name = 'NotSentError';
}

/** The upstream answered with a JSON-RPC error: it refused the request, which passes to the client as it is. */
export class UpstreamRpcError extends Error {
  override readonly name = 'UpstreamRpcError';
  constructor(readonly error: NonNullable<JsonRpcMessage['error']>) {
    super(`The upstream MCP server answered with error ${error.code}: ${error.message}`);
  }
}

// Failures of fetch that mean no connection was made, so the request body cannot have arrived.
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** Whether a failed send certainly delivered nothing. Anything not known to be undelivered may have arrived. */
function certainlyNotSent(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NOT_CONNECTED.has(code)) return true;
    // SDK 1.x StreamableHTTPError carries the HTTP status: a 4xx means the server refused to take the message.
    if (typeof code === 'number' && code >= 400 && code < 500) return true;
    if (/^Not connected$/i.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}

interface Pending {
  readonly resolve: (result: Record<string, unknown>) => void;
  readonly reject: (error: Error) => void;
}

const ID_PREFIX = 'tool-ledger-gateway-';

/**
 * The gateway's own requests to the upstream: ids of their own (`tool-ledger-gateway-N`, a string prefix no SDK
 * client uses; SDK clients number their requests), a
 * timeout each, and an answer for every one when the upstream goes away. Client requests the gateway does not
 * handle itself keep their ids and never pass through here.
 */
export class UpstreamRequests {
  readonly #pending = new Map<string, Pending>();
  #next = 0;
  #closed = false;

  constructor(
    private readonly transport: GatewayTransport,
    private readonly log: (line: string) => void = () => {},
  ) {}

  get closed(): boolean {
    return this.#closed;
  }

  /** How many of the gateway's requests wait for an answer. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Takes a response addressed to one of the gateway's requests; false for anything else. A late answer to a
   * request that already ended (timed out, cancelled, the connection was given up) is dropped: its call was
   * reported as OUTCOME_UNKNOWN, and a second answer would contradict the first.
   */
  take(message: JsonRpcMessage): boolean {
    if (typeof message.id !== 'string' || message.method !== undefined) return false;
    const pending = this.#pending.get(message.id);
    if (pending === undefined) {
      if (!message.id.startsWith(ID_PREFIX)) return false;
      this.log(
        `tool-ledger gateway: dropped a late answer to ${message.id}: that call already ended with an unknown outcome.`,
      );
      return true;
    }
    this.#pending.delete(message.id);
    if (message.error) pending.reject(new UpstreamRpcError(message.error));
    else pending.resolve(message.result ?? {});
    return true;
  }

  /** The upstream is gone: every request still waiting may or may not have taken effect. */
  closeAll(): void {
    this.#closed = true;
    const waiting = [...this.#pending.values()];
    this.#pending.clear();
    for (const pending of waiting) {
      pending.reject(
        new OutcomeUnknownError(
          'The upstream MCP server closed the connection after the request was sent and before it answered, so it is not known whether the call took effect.',
        ),
      );
    }
  }

  /**
   * Sends one request and waits for its answer. Rejects with `NotSentError` when the request certainly did not
   * leave, `OutcomeUnknownError` when it left and no answer came (timeout, connection lost, cancelled), and
   * `UpstreamRpcError` for a JSON-RPC error answer.
   */
  async request(
    method: string,
    params: Record<string, unknown>,
    options: { readonly timeoutMs: number; readonly signal?: AbortSignal | undefined },
  ): Promise<Record<string, unknown>> {
    if (this.#closed) throw new NotSentError('The upstream MCP server is not connected.');
    const id = `${ID_PREFIX}${++this.#next}`;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const answer = new Promise<Record<string, unknown>>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
    });
    try {
      await this.transport.send({ jsonrpc: '2.0', id, method, params });
    } catch (error) {
      this.#pending.delete(id);
      if (certainlyNotSent(error)) {
        throw new NotSentError(
          `The request could not be sent to the upstream MCP server (${(error as Error).message}).`,
          { cause: error },
        );
      }
      throw new OutcomeUnknownError(
        `Sending the request to the upstream MCP server failed part-way (${(error as Error).message}), so it may have arrived.`,
        { cause: error },
      );
    }
    const unknown = (why: string) => {
      if (!this.#pending.delete(id)) return;
      // Tells the upstream to stop; a server that already finished ignores it.
      this.transport
        .send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: why } })
        .catch(() => {});
      return new OutcomeUnknownError(`${why} It is not known whether the call took effect upstream.`);
    };
    const ended = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = unknown(
          `The upstream MCP server did not answer within ${Math.round(options.timeoutMs / 1000)} s of the request.`,
        );
        if (error) reject(error);
      }, options.timeoutMs);
      timer.unref?.();
      if (options.signal) {
        onAbort = () => {
          const error = unknown('The call was cancelled after the request was sent upstream.');
          if (error) reject(error);
        };
        if (options.signal.aborted) onAbort();
        else options.signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    try {
      return await Promise.race([answer, ended]);
    } finally {
      clearTimeout(timer);
      if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    }
  }
}
