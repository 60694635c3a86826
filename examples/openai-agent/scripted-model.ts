import type { AgentInputItem, AgentOutputItem, Model, ModelRequest, ModelResponse } from '@openai/agents';
import { Usage } from '@openai/agents';

/**
 * A stand-in for an LLM so the example runs offline: it implements the Agents SDK's `Model` interface and plays
 * the part of a model that creates an invoice, then emails it, then reports. It decides from the conversation
 * it is sent, like a real model, so a run resumed from saved state continues where it stopped.
 */
export class ScriptedModel implements Model {
  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    const items: AgentInputItem[] = typeof request.input === 'string' ? [] : request.input;
    const outputOf = (callId: string) =>
      items.find((item) => item.type === 'function_call_result' && item.callId === callId);
    let output: AgentOutputItem[];
    if (!outputOf('call_invoice_1')) {
      output = [call('call_invoice_1', 'create_invoice', { customer: 'cus_42', amountCents: 12_000 })];
    } else if (!outputOf('call_email_1')) {
      output = [
        call('call_email_1', 'send_email', {
          to: 'billing@customer.example',
          subject: 'Your invoice',
          body: 'Please find your invoice for 120.00 attached.',
        }),
      ];
    } else {
      output = [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [
            { type: 'output_text', text: 'Invoice created and emailed to billing@customer.example.' },
          ],
        },
      ];
    }
    return { usage: new Usage(), output };
  }

  // biome-ignore lint/correctness/useYield: the example runs without streaming
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('ScriptedModel does not stream; use run() without { stream: true }.');
  }
}

function call(callId: string, name: string, args: unknown): AgentOutputItem {
  return { type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' };
}
