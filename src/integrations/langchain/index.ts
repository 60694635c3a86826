// Public API of `tool-ledger/langchain`. Every export here is public and follows semver.
export type { LangChainResolver, LedgerLangChainToolOptions } from './tool.js';
export { ledgerLangChainTool } from './tool.js';
