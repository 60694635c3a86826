import type { Ledger } from '../create-ledger.js';
import type { LedgerTool } from '../middleware/tool.js';
import { gatewayLedgerTool } from './call.js';
import type { ToolFacts } from './catalog.js';

const ledgerTools = new WeakMap<Ledger, Map<string, LedgerTool<unknown, unknown>>>();

/** One ledger tool per tool name for the ledger's lifetime (the ledger refuses a second one of the same name). */
export function gatewayLedgerToolFor(ledger: Ledger, facts: ToolFacts): LedgerTool<unknown, unknown> {
  let tools = ledgerTools.get(ledger);
  if (tools === undefined) {
    tools = new Map();
    ledgerTools.set(ledger, tools);
  }
  let tool = tools.get(facts.name);
  if (tool === undefined) {
    tool = gatewayLedgerTool(ledger, facts);
    tools.set(facts.name, tool);
  }
  return tool;
}
