// An OpenAI Agents SDK agent whose tools are replay-safe. It creates an invoice, then asks a human to approve
// an email; the run is saved while it waits, approved, and resumed. A second worker resuming the same saved run
// (as after a crash and retry) gets the email's original result: the customer receives one email, not two.
//
//   node --import tsx examples/openai-agent/agent.ts
//
// Offline by default (a scripted model); with OPENAI_API_KEY set it uses a real model (OPENAI_MODEL, default
// gpt-4.1-mini).
import { Agent, type Model, RunState, run, setTracingDisabled } from '@openai/agents';
import { z } from 'zod';
// In your project: import { createLedger } from 'tool-ledger';
import { createLedger } from '../../src/index.js';
// In your project: import { ledgerFunctionTool } from 'tool-ledger/openai-agents';
import { ledgerFunctionTool } from '../../src/integrations/openai-agents/index.js';
import { ScriptedModel } from './scripted-model.js';

const online = Boolean(process.env.OPENAI_API_KEY);
// The SDK's own tracing exports to OpenAI; offline there is nowhere to send it.
if (!online) setTracingDisabled(true);

const ledger = await createLedger({ pglite: process.env.LEDGER_PGLITE ?? 'memory://', telemetry: false });
const sentEmails: string[] = [];
let invoices = 0;

const createInvoice = ledger.tool({
  name: 'create_invoice',
  kind: 'mutation',
  description: 'Creates an invoice for a customer and returns its id.',
  input: z.object({ customer: z.string().min(1), amountCents: z.number().int().positive() }),
  handler: async ({ customer, amountCents }) => ({ invoiceId: `inv_${++invoices}`, customer, amountCents }),
});

const sendEmail = ledger.tool({
  name: 'send_email',
  kind: 'mutation',
  description: 'Sends an email.',
  input: z.object({ to: z.string().email(), subject: z.string(), body: z.string() }),
  handler: async ({ to, subject }) => {
    sentEmails.push(`${to}: ${subject}`);
    return { messageId: `msg_${sentEmails.length}`, to };
  },
});

interface AppContext {
  /** Persisted with the conversation; with the tool call id it names each intent. */
  conversationId: string;
  tenant: string;
  user: string;
}

function buildAgent(): Agent<AppContext> {
  const model: Model | string = online ? (process.env.OPENAI_MODEL ?? 'gpt-4.1-mini') : new ScriptedModel();
  return new Agent<AppContext>({
    name: 'billing assistant',
    instructions: 'Create the invoice the user asks for, then email it to the customer.',
    model,
    tools: [
      ledgerFunctionTool<AppContext>(createInvoice),
      ledgerFunctionTool<AppContext>(sendEmail, { needsApproval: true }),
    ],
  });
}

const context: AppContext = { conversationId: 'conv_2026_0042', tenant: 'acme', user: 'user_7' };
const first = await run(buildAgent(), 'Invoice cus_42 for 120.00 and email it to billing@customer.example.', {
  context,
});
console.log(`1. run paused for approval: ${first.interruptions.map((i) => i.name).join(', ') || 'nothing'}`);
// What a web app stores while a human looks at the approval request.
const saved = first.state.toString();

for (const worker of ['worker A', 'worker B (retry after a crash)']) {
  const agent = buildAgent();
  const state = await RunState.fromString(agent, saved);
  for (const interruption of state.getInterruptions()) state.approve(interruption);
  const resumed = await run(agent, state);
  console.log(`2. ${worker} resumed the saved run: ${resumed.finalOutput}`);
}

console.log(`3. invoices created: ${invoices}, emails sent: ${sentEmails.length} (${sentEmails.join('; ')})`);
await ledger.close();
