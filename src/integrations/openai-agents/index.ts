// Public API of `tool-ledger/openai-agents`. Every export here is public and follows semver.

export type { ApprovalDesk } from '../shared/approvals.js';
export type { ApprovableRunState, InterruptionDecision } from './approvals.js';
export { approveInterruption, rejectInterruption } from './approvals.js';
export type { AgentsResolver, AgentsToolCall, LedgerFunctionToolOptions } from './tool.js';
export { ledgerFunctionTool } from './tool.js';
