import { createConnection, createServer, type Server, type Socket } from 'node:net';

export type ProxyMode = 'pass' | 'blackhole' | 'delay';

/**
 * A loopback TCP proxy in front of Postgres that can reset every connection, black-hole traffic and delay it.
 * A black hole swallows bytes without a reset, as a lost NAT or firewall entry does: a connection that saw it
 * stays dead for good (it is "wedged"), while connections opened after the network is back work.
 */
export interface FaultProxy {
  readonly port: number;
  readonly url: (database?: string) => string;
  mode: ProxyMode;
  delayMs: number;
  /** Sends a TCP reset on every open connection, both sides. */
  resetAll(): number;
  /**
   * Once: resets the connection whose client sends bytes containing `text`, before they reach the server or just
   * after (then the server acts on them, and only the answer is lost).
   */
  resetOn(text: string, when: 'before' | 'after'): Promise<void>;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number): Promise<FaultProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const state = { mode: 'pass' as ProxyMode, delayMs: 0 };
  let trigger: { text: string; when: 'before' | 'after'; fired: () => void } | undefined;

  const forward = (from: Socket, to: Socket, wedged: { value: boolean }, upstream: boolean) => {
    from.on('data', (chunk: Buffer) => {
      if (upstream && trigger && chunk.includes(trigger.text)) {
        const { when, fired } = trigger;
        trigger = undefined;
        if (when === 'after') to.write(chunk);
        // Nothing more passes either way, so the server's answer is lost.
        wedged.value = true;
        // Give the server a moment to act on what it received before the reset reaches it.
        setTimeout(
          () => {
            from.resetAndDestroy();
            to.resetAndDestroy();
            fired();
          },
          when === 'after' ? 50 : 0,
        );
        return;
      }
      // Read by reference each time: a mode change applies to connections already open.
      if (state.mode === 'blackhole') wedged.value = true;
      if (wedged.value) return;
      if (state.mode === 'delay') {
        from.pause();
        setTimeout(() => {
          if (!to.destroyed) to.write(chunk);
          from.resume();
        }, state.delayMs);
        return;
      }
      if (!to.destroyed) to.write(chunk);
    });
    from.on('end', () => {
      if (!wedged.value) to.end();
    });
  };

  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop);
    upstream.on('error', drop);
    client.on('close', drop);
    upstream.on('close', drop);
    const wedged = { value: state.mode === 'blackhole' };
    forward(client, upstream, wedged, true);
    forward(upstream, client, wedged, false);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    port,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    get mode() {
      return state.mode;
    },
    set mode(mode) {
      state.mode = mode;
    },
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms) {
      state.delayMs = ms;
    },
    resetAll() {
      const n = pairs.size;
      for (const [a, b] of pairs) {
        a.resetAndDestroy();
        b.resetAndDestroy();
      }
      pairs.clear();
      return n;
    },
    resetOn(text, when) {
      return new Promise((fired) => {
        trigger = { text, when, fired };
      });
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
