// A request the gateway gave up on (cancelled, timed out, upstream declared gone) has been reported as
// OUTCOME_UNKNOWN; an answer that arrives after that is dropped, never passed to the client as a second answer.
// The transport is the SDK's in-memory pair, the far end answering by hand as a late server would.
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { expect, it } from 'vitest';
import { OutcomeUnknownError } from '../../src/contract/errors.js';
import type { GatewayTransport, JsonRpcMessage } from '../../src/gateway/types.js';
import { UpstreamRequests } from '../../src/gateway/upstream.js';

it('drops a late answer to a request that already ended with an unknown outcome', async () => {
  const [near, far] = InMemoryTransport.createLinkedPair();
  const received: JsonRpcMessage[] = [];
  far.onmessage = (message) => void received.push(message as JsonRpcMessage);
  const logged: string[] = [];
  const requests = new UpstreamRequests(near as unknown as GatewayTransport, (line) => logged.push(line));
  await near.start();
  await far.start();

  const abort = new AbortController();
  const call = requests.request('tools/call', { name: 'x' }, { timeoutMs: 3_600_000, signal: abort.signal });
  await expect.poll(() => received.length).toBe(1);
  const id = received[0]?.id as string;
  abort.abort();
  await expect(call).rejects.toBeInstanceOf(OutcomeUnknownError);
  // The gateway told the upstream to stop.
  await expect.poll(() => received.at(-1)?.method).toBe('notifications/cancelled');

  const late: JsonRpcMessage = { jsonrpc: '2.0', id, result: { content: [] } };
  expect(requests.take(late)).toBe(true);
  expect(logged.join('\n')).toMatch(/dropped a late answer/);
  // A response to a client's own (numbered) request is not the gateway's to take.
  expect(requests.take({ jsonrpc: '2.0', id: 7, result: {} })).toBe(false);
  await near.close();
});
