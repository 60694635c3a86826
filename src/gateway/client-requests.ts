import type { Ledger } from '../create-ledger.js';
import { type ApprovalAsker, supportsFormElicitation } from '../integrations/mcp/approval.js';
import { isRecord } from '../integrations/shared/adapter-tool.js';
import type { JsonRpcMessage } from './types.js';

interface Pending {
  readonly resolve: (result: Record<string, unknown>) => void;
  readonly reject: (error: Error) => void;
  readonly timer: NodeJS.Timeout;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * Requests the gateway itself sends to its client (the approval form of a call that awaits a decision), under
 * ids of its own so the client's answers are told apart from its answers to the upstream's requests. Each one is
 * bounded in time and ends with the call it belongs to.
 */
export class ClientRequests {
  #next = 0;
  readonly #pending = new Map<string, Pending>();

  constructor(
    private readonly send: (message: JsonRpcMessage, relatedRequestId: string | number) => Promise<void>,
  ) {}

  request(
    method: string,
    params: Record<string, unknown>,
    options: { relatedRequestId: string | number; timeoutMs: number; signal: AbortSignal | undefined },
  ): Promise<Record<string, unknown>> {
    const id = `tool-ledger-gateway-${++this.#next}`;
    return new Promise((resolve, reject) => {
      const end = (error: Error) => {
        if (this.#settle(id)) reject(error);
      };
      const timer = setTimeout(
        () => end(new Error(`${method} got no answer within ${options.timeoutMs} ms`)),
        options.timeoutMs,
      );
      const onAbort = () => end(new Error(`${method} was abandoned: its call ended`));
      this.#pending.set(id, { resolve, reject, timer, signal: options.signal, onAbort });
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.send({ jsonrpc: '2.0', id, method, params }, options.relatedRequestId).catch((error: unknown) =>
        end(error instanceof Error ? error : new Error(String(error))),
      );
    });
  }

  /** Takes the client's answer to one of the gateway's own requests; false for any other message. */
  take(message: JsonRpcMessage): boolean {
    if (message.method !== undefined || typeof message.id !== 'string') return false;
    const pending = this.#pending.get(message.id);
    if (pending === undefined || !this.#settle(message.id)) return false;
    if (message.error !== undefined) pending.reject(new Error(message.error.message));
    else pending.resolve(message.result ?? {});
    return true;
  }

  /** Ends every request still waiting (the session closes). */
  closeAll(): void {
    for (const [id, pending] of [...this.#pending]) {
      if (this.#settle(id)) pending.reject(new Error('the client connection closed'));
    }
  }

  #settle(id: string): boolean {
    const pending = this.#pending.get(id);
    if (pending === undefined) return false;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    pending.signal?.removeEventListener('abort', pending.onAbort);
    return true;
  }
}

/**
 * What one session needs to ask its client for approvals: the client's `initialize` params (does it take
 * form elicitation, what is its name) and the gateway's own requests to it.
 */
export class ClientApprovals {
  readonly #requests: ClientRequests;
  #client: Record<string, unknown> | undefined;

  constructor(
    private readonly ledger: Ledger,
    /** How long the person has to answer the form (the gateway's `approvalFormTimeoutMs`). */
    private readonly formTimeoutMs: number,
    send: (message: JsonRpcMessage, relatedRequestId: string | number) => Promise<void>,
  ) {
    this.#requests = new ClientRequests(send);
  }

  /** Notes the client's `initialize` request; takes the client's answers to the gateway's own requests. */
  take(message: JsonRpcMessage): boolean {
    if (message.method === 'initialize') this.#client = message.params;
    return this.#requests.take(message);
  }

  /** How one call asks this client for a decision; undefined when the client declared no form elicitation. */
  forCall(callId: string | number, signal: AbortSignal): ApprovalAsker | undefined {
    if (!supportsFormElicitation(this.#client?.capabilities)) return undefined;
    const info = isRecord(this.#client?.clientInfo) ? this.#client.clientInfo : undefined;
    const name =
      typeof info?.name === 'string' && info.name ? `MCP client ${info.name.slice(0, 100)}` : undefined;
    return {
      ledger: this.ledger,
      // The decider is the call's user, else the client as it named itself.
      approver: async () => undefined,
      elicit: {
        clientName: name,
        ask: async (params) =>
          this.#requests.request(
            'elicitation/create',
            { ...params },
            { relatedRequestId: callId, timeoutMs: this.formTimeoutMs, signal },
          ),
      },
    };
  }

  closeAll(): void {
    this.#requests.closeAll();
  }
}
