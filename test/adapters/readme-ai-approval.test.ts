import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LanguageModel } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { codeBlocks } from '../support/markdown.js';

// The README's AI SDK approval example, run as written (test/e2e/readme-examples.test.ts only type-checks it):
// its function against the SDK's mock model, on a database of its own on real Postgres, since the example opens
// the ledger from DATABASE_URL in the default schema. Its imports of tool-ledger point at the sources; the rest
// (ai, zod) resolve from this checkout's node_modules, as in a user's project.

const root = join(import.meta.dirname, '../..');
const dir = join(root, 'node_modules/.cache/tool-ledger-readme');
const file = join(dir, `ai-approval-${randomBytes(4).toString('hex')}.ts`);
const database = `readme_ai_${randomBytes(4).toString('hex')}`;
const admin = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1 });
const saved = process.env.DATABASE_URL;

type Step = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

beforeAll(async () => {
  const block = codeBlocks(readFileSync(join(root, 'README.md'), 'utf8'), 'ts').find((b) =>
    b.includes('recordAiApprovals'),
  );
  if (block === undefined) throw new Error('README.md has no TypeScript example with recordAiApprovals');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    file,
    block
      .replace("from 'tool-ledger/ai-sdk'", `from '${join(root, 'src/integrations/ai-sdk/index.js')}'`)
      .replace("from 'tool-ledger'", `from '${join(root, 'src/index.js')}'`),
  );
  await admin.query(`CREATE DATABASE ${database}`);
  const url = new URL(saved!);
  url.pathname = `/${database}`;
  process.env.DATABASE_URL = url.href;
});

afterAll(async () => {
  process.env.DATABASE_URL = saved;
  rmSync(file, { force: true });
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await admin.end();
});

it("runs the README's AI SDK approval example: the approved refund runs once, recorded under the approver", async () => {
  const prompts: unknown[][] = [];
  const steps: Step[] = [
    {
      content: [
        {
          type: 'tool-call',
          toolCallId: 'call_1',
          toolName: 'refund',
          input: JSON.stringify({ order: '1042', cents: 4200 }),
        },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    },
    {
      content: [{ type: 'text', text: 'Refunded 42.00 on order 1042.' }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage,
      warnings: [],
    },
  ];
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(options.prompt as unknown[]);
      const step = steps.shift();
      if (!step) throw new Error('script exhausted');
      return step;
    },
  });
  const example = (await import(file)) as {
    refundWithApproval(model: LanguageModel, approver: string): Promise<string>;
  };

  expect(await example.refundWithApproval(model, 'alice@support')).toBe('Refunded 42.00 on order 1042.');

  // The model's second step read the refund's result: the handler ran after the approval.
  expect(JSON.stringify(prompts[1])).toContain('{\\"order\\":\\"1042\\",\\"refunded\\":4200}');
  const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await db.connect();
  try {
    const audit = await db.query<{ actor: string; action: string; reason: string }>(
      'SELECT actor, action, reason FROM tool_ledger.tool_ledger_audit',
    );
    expect(audit.rows).toEqual([
      expect.objectContaining({ actor: 'alice@support', reason: 'customer verified by phone' }),
    ]);
    const runs = await db.query<{ status: string }>('SELECT status FROM tool_ledger.tool_runs');
    expect(runs.rows).toEqual([{ status: 'succeeded' }]);
  } finally {
    await db.end();
  }
});
