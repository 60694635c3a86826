import { isRecord } from '../integrations/shared/adapter-tool.js';
import type { JsonRpcMessage } from './types.js';

/** The lists whose `notifications/<list>/list_changed` an upstream sends. */
export type ListName = 'tools' | 'prompts' | 'resources';

const LIST_CHANGED: Readonly<Record<string, ListName>> = {
  'notifications/tools/list_changed': 'tools',
  'notifications/prompts/list_changed': 'prompts',
  'notifications/resources/list_changed': 'resources',
};

/** A progress token of the gateway's own, unlike any a client picks (clients number theirs from 0). */
const TOKEN_PREFIX = 'tool-ledger-gateway-progress-';

/**
 * The notifications of the one upstream connection every 2026-07-28 request shares, each sent where it belongs.
 * Progress: the clients' tokens would collide on a shared connection (each client numbers its own), so a request
 * that asks for progress goes upstream with a token of the gateway's own, and each notification naming that token
 * goes back to the client's request under the client's token. List changes go to `onListChanged` (the catalog, and
 * the clients listening through `subscriptions/listen`).
 */
export class SharedUpstreamRelay {
  #next = 0;
  readonly #progress = new Map<string, (params: Record<string, unknown>) => void>();

  constructor(private readonly onListChanged: (list: ListName) => void) {}

  /**
   * The request's params with its progress token swapped for the gateway's own while `run` runs; `notify` gets each
   * progress notification's params with the client's token back. Params without a token pass as they are.
   */
  async withProgress<T>(
    params: Record<string, unknown>,
    notify: (params: Record<string, unknown>) => Promise<void>,
    run: (params: Record<string, unknown>) => Promise<T>,
  ): Promise<T> {
    const meta = isRecord(params._meta) ? params._meta : undefined;
    const token = meta?.progressToken;
    if (typeof token !== 'string' && typeof token !== 'number') return run(params);
    const own = `${TOKEN_PREFIX}${++this.#next}`;
    this.#progress.set(own, (progress) => {
      // A client that went away cannot be told; the call goes on.
      notify({ ...progress, progressToken: token }).catch(() => {});
    });
    try {
      return await run({ ...params, _meta: { ...meta, progressToken: own } });
    } finally {
      this.#progress.delete(own);
    }
  }

  /** Takes a notification of the upstream's; false for anything else (a response goes to the requests). */
  take(message: JsonRpcMessage): boolean {
    if (message.id !== undefined || typeof message.method !== 'string') return false;
    if (message.method === 'notifications/progress') {
      const token = message.params?.progressToken;
      if (typeof token === 'string') this.#progress.get(token)?.(message.params ?? {});
      return true;
    }
    const list = LIST_CHANGED[message.method];
    if (list !== undefined) this.onListChanged(list);
    return true;
  }

  /** How many requests wait for progress (for tests). */
  get waiting(): number {
    return this.#progress.size;
  }
}
