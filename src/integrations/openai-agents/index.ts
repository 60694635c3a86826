// Public API of `tool-ledger/openai-agents`. Every export here is public and follows semver.

export type { AgentsResolver, AgentsToolCall, LedgerFunctionToolOptions } from './tool.js';
export { ledgerFunctionTool } from './tool.js';
