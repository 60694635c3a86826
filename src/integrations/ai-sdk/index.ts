// Public API of `tool-ledger/ai-sdk`. Every export here is public and follows semver.

export type { AiSdkExecution, AiSdkResolver, LedgerAiToolOptions } from './tool.js';
export { ledgerAiTool } from './tool.js';
