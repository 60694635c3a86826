// Public API of `tool-ledger/mcp-instrumentation`. Every export here is public and follows semver.
export { ToolLedgerMcpInstrumentation } from './instrumentation.js';
export type { ToolLedgerMcpInstrumentationConfig } from './types.js';
