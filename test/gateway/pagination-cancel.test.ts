// Pass-through the npm servers cannot show: paged tools/list and resources/list with opaque cursors handed back
// untouched (mutating tools still gain the key on every page), cancellation of a forwarded call reaching the
// upstream, and tools/list_changed making the gateway read the annotations again. The upstream is a fixture
// server on the real SDK; over stdio (spawned by the gateway) and Streamable HTTP (--upstream), both SDK lines.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AnyClient,
  callTool,
  errorCode,
  eventually,
  gatewayCommand,
  gatewaySuite,
  httpClient,
  httpGateway,
  httpUpstream,
  LINES,
  type Line,
  ROOT,
  stdioClient,
  texts,
} from './support.js';

const suite = gatewaySuite('paged');
const { db, schema } = suite;
const SERVER = join(ROOT, 'test/gateway/fixtures/paged-server.mjs');

const CASES = LINES.flatMap((line) => [
  { line, transport: 'stdio' as const },
  { line, transport: 'Streamable HTTP' as const },
]);

/** callTool with progress and a signal: 1.x takes (params, resultSchema, options), 2.x takes (params, options). */
function callCancellable(
  line: Line,
  client: AnyClient,
  params: { name: string; arguments: Record<string, unknown> },
  options: { onprogress: () => void; signal: AbortSignal },
): Promise<unknown> {
  return line === '1.x'
    ? client.callTool(params, undefined, options)
    : (client.callTool as unknown as (p: unknown, o: unknown) => Promise<unknown>)(params, options);
}

describe.each(CASES)(
  'pagination, cancellation, list-changed: SDK $line client over $transport',
  ({ line, transport }) => {
    let client: AnyClient;
    beforeAll(async () => {
      const common = suite.ledgerArgs();
      if (transport === 'stdio') {
        client = await stdioClient(line, gatewayCommand([...common, '--', process.execPath, SERVER]));
        return;
      }
      // A server and a gateway of this case's own: the fixture's annotations are per process.
      const upstream = await suite.child(httpUpstream(SERVER, ['http']));
      const gateway = await suite.child(httpGateway([...common, '--upstream', upstream.url.href]));
      client = await httpClient(line, gateway.url);
    });
    afterAll(() => client?.close());

    it('passes paged tools/list through, cursors untouched, the key added on every page', async () => {
      const pages: Array<{ names: string[]; nextCursor?: string }> = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const result = await client.listTools(cursor === undefined ? {} : { cursor });
        pages.push({
          names: result.tools.map((t) => t.name),
          ...(result.nextCursor ? { nextCursor: result.nextCursor } : {}),
        });
        for (const tool of result.tools) {
          const keyed = Object.hasOwn(tool.inputSchema.properties ?? {}, 'idempotency_key');
          expect(keyed).toBe(tool.annotations?.readOnlyHint !== true);
        }
        cursor = result.nextCursor;
        if (cursor === undefined) break;
      }
      // A 2.x client walks the pages itself when given no cursor and answers with them all.
      expect(pages.map((p) => p.names.length)).toEqual(line === '1.x' ? [2, 2, 2, 1] : [7]);
      expect(pages.flatMap((p) => p.names)).toContain('last_tool');
      // The fixture's own cursor format: the server refuses any cursor it did not hand out.
      for (const p of pages.slice(0, -1)) expect(p.nextCursor).toMatch(/^opaque\+\/.+==$/);
    });

    it('passes paged resources/list through', async () => {
      const uris: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const result = await client.listResources(cursor === undefined ? {} : { cursor });
        uris.push(...result.resources.map((r) => r.uri));
        cursor = result.nextCursor;
        if (cursor === undefined) break;
      }
      expect(uris).toEqual([0, 1, 2, 3, 4].map((i) => `paged://item/${i}`));
    });

    it('passes a cancellation through to the upstream, for read-only and mutating calls', async () => {
      const count = async () => Number(texts(await callTool(client, 'cancellations', {})));
      const before = await count();
      for (const [name, args] of [
        ['wait_for_cancel', {}],
        ['mutate_until_cancelled', { idempotency_key: `cancel-${line}-${transport}` }],
      ] as const) {
        const abort = new AbortController();
        let started = false;
        const call = callCancellable(
          line,
          client,
          { name, arguments: args },
          {
            onprogress: () => {
              started = true;
            },
            signal: abort.signal,
          },
        );
        // The upstream said it started, so the request is there to cancel.
        await eventually(() => started);
        abort.abort();
        await expect(call).rejects.toThrow();
      }
      await eventually(async () => (await count()) === before + 2);
      // The mutating call was sent, so whether it took effect is not known.
      await eventually(async () => {
        const rows = await db.sql<{ status: string }>(
          `SELECT status FROM "${schema}".tool_runs WHERE idempotency_key = $1`,
          [`cancel-${line}-${transport}`],
        );
        return rows[0]?.status === 'unknown';
      });
    });

    it('reads the annotations again after tools/list_changed', async () => {
      expect(errorCode(await callTool(client, 'switchable', {}))).toBe('KEY_REQUIRED');
      await callTool(client, 'make_read_only', { idempotency_key: `flip-${line}-${transport}` });
      const after = await callTool(client, 'switchable', {});
      expect(after.isError).toBeFalsy();
      expect(texts(after)).toMatch(/^switchable call \d+$/);
    });
  },
);
