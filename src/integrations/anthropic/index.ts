// Public API of `tool-ledger/anthropic`. Every export here is public and follows semver.
export type {
  AnthropicResolver,
  AnthropicToolResult,
  AnthropicToolUse,
  LedgerAnthropicToolOptions,
} from './tool.js';
export { answerToolUse, ledgerAnthropicTool } from './tool.js';
