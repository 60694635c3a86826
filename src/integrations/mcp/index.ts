// Public API of `tool-ledger/mcp`. Every export here is public and follows semver.
export type { ApprovalDesk } from '../shared/approvals.js';
export type { McpApprovalSettings } from './approval.js';
export { MCP_ATTR, STATELESS_PROTOCOL_VERSION } from './attributes.js';
export {
  keyArgumentDescription,
  MCP_CALL_META_KEY,
  MCP_ERROR_META_KEY,
  MCP_KEY_META_KEY,
  registerMcpTool,
} from './register.js';
export type { McpTraceMeta } from './trace-meta.js';
export { mcpTraceMeta, withMcpTraceMeta } from './trace-meta.js';
export type {
  McpApprovalOptions,
  McpAuthInfo,
  McpRequestExtra,
  McpRequestInfo,
  McpResolver,
  McpServerLike,
  McpToolResult,
  RegisteredMcpTools,
  RegisterMcpToolOptions,
} from './types.js';
