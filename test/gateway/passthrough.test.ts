// Everything that is not a tool call passes through the gateway untouched: resources, prompts, progress
// notifications, ping. The upstream is the npm "everything" server, over stdio (spawned by the gateway) and over
// Streamable HTTP (--upstream), with clients of both SDK lines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AnyClient,
  callTool,
  EVERYTHING_SERVER,
  errorCode,
  gatewayCommand,
  gatewaySuite,
  httpClient,
  httpGateway,
  httpUpstream,
  LINES,
  outcome,
  stdioClient,
  texts,
} from './support.js';

const suite = gatewaySuite('pass');
let gatewayUrl: URL;

beforeAll(async () => {
  const upstream = await suite.child(httpUpstream());
  const gateway = await suite.child(httpGateway([...suite.ledgerArgs(), '--upstream', upstream.url.href]));
  gatewayUrl = gateway.url;
});

const CASES = LINES.flatMap((line) => [
  { line, transport: 'stdio' as const },
  { line, transport: 'Streamable HTTP' as const },
]);

describe.each(CASES)('pass-through, MCP SDK $line client over $transport', ({ line, transport }) => {
  let client: AnyClient;
  beforeAll(async () => {
    client =
      transport === 'stdio'
        ? await stdioClient(
            line,
            gatewayCommand([...suite.ledgerArgs(), '--', process.execPath, EVERYTHING_SERVER, 'stdio']),
          )
        : await httpClient(line, gatewayUrl);
  });
  afterAll(() => client?.close());

  it('passes the server identity, resources and resource reads through', async () => {
    expect(client.getServerVersion()?.name).toMatch(/everything/i);
    const { resources } = await client.listResources();
    expect(resources.length).toBeGreaterThan(0);
    const first = resources[0]!;
    const read = await client.readResource({ uri: first.uri });
    expect(read.contents[0]?.uri).toBe(first.uri);
    const { resourceTemplates } = await client.listResourceTemplates();
    expect(resourceTemplates.length).toBeGreaterThan(0);
  });

  it('passes prompts through', async () => {
    const { prompts } = await client.listPrompts();
    expect(prompts.map((p) => p.name)).toEqual(expect.arrayContaining(['simple-prompt', 'args-prompt']));
    const simple = await client.getPrompt({ name: 'simple-prompt' });
    expect(simple.messages.length).toBeGreaterThan(0);
    const withArgs = await client.getPrompt({ name: 'args-prompt', arguments: { city: 'Lisbon' } });
    expect(JSON.stringify(withArgs.messages)).toContain('Lisbon');
  });

  it('passes completions and logging/setLevel through', async () => {
    const completion = await client.complete({
      ref: { type: 'ref/prompt', name: 'completable-prompt' },
      argument: { name: 'department', value: 'E' },
    });
    expect(completion.completion.values).toContain('Engineering');
    await client.setLoggingLevel('error');
  });

  it('passes ping and progress notifications of a read-only tool through, with no key', async () => {
    await client.ping();
    const progress: number[] = [];
    const params = { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } };
    const options = { onprogress: (p: { progress: number }) => void progress.push(p.progress) };
    // 1.x takes (params, resultSchema, options); 2.x takes (params, options).
    const result = (await (line === '1.x'
      ? client.callTool(params, undefined, options)
      : (client.callTool as unknown as (p: unknown, o: unknown) => Promise<unknown>)(params, options))) as {
      isError?: boolean;
    };
    expect(result.isError).toBeFalsy();
    expect(progress.length).toBeGreaterThan(0);
  });

  it('gives the server’s mutating tools a key: a replay does not toggle again', async () => {
    const missing = await callTool(client, 'toggle-simulated-logging', {});
    expect(errorCode(missing)).toBe('KEY_REQUIRED');
    const key = `toggle-${line}-${transport}`;
    const first = await callTool(client, 'toggle-simulated-logging', { idempotency_key: key });
    expect(texts(first)).toMatch(/Started simulated/);
    const again = await callTool(client, 'toggle-simulated-logging', { idempotency_key: key });
    expect(outcome(again)).toBe('replayed');
    expect(texts(again)).toMatch(/Started simulated/);
    // A new key is a new intent: it toggles, which shows the replay did not.
    const stop = await callTool(client, 'toggle-simulated-logging', { idempotency_key: `${key}-stop` });
    expect(texts(stop)).toMatch(/Stopped simulated/);
  });
});

describe.each(['stdio', 'Streamable HTTP'] as const)('server-to-client requests over %s', (transport) => {
  it('relays the server’s sampling request to the client, and a replay does not ask again', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const { StreamableHTTPClientTransport } = await import(
      '@modelcontextprotocol/sdk/client/streamableHttp.js'
    );
    const { CreateMessageRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
    const client = new Client({ name: 'sampling-test', version: '1' }, { capabilities: { sampling: {} } });
    let asked = 0;
    client.setRequestHandler(CreateMessageRequestSchema, async () => {
      asked++;
      return { role: 'assistant', model: 'test-model', content: { type: 'text', text: 'sampled answer' } };
    });
    const spawned = gatewayCommand([
      ...suite.ledgerArgs(),
      '--',
      process.execPath,
      EVERYTHING_SERVER,
      'stdio',
    ]);
    await client.connect(
      transport === 'stdio'
        ? new StdioClientTransport({ ...spawned, stderr: 'pipe', env: process.env as Record<string, string> })
        : new StreamableHTTPClientTransport(gatewayUrl),
    );
    try {
      const args = { prompt: 'hello', maxTokens: 10, idempotency_key: `sample-${transport}` };
      const first = await callTool(client, 'trigger-sampling-request', args);
      expect(texts(first)).toContain('sampled answer');
      expect(asked).toBe(1);
      const again = await callTool(client, 'trigger-sampling-request', args);
      expect(outcome(again)).toBe('replayed');
      expect(texts(again)).toContain('sampled answer');
      expect(asked).toBe(1);
    } finally {
      await client.close();
    }
  });
});
