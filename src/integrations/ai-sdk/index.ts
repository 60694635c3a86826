// Public API of `tool-ledger/ai-sdk`. Every export here is public and follows semver.

export type { ApprovalDesk } from '../shared/approvals.js';
export type { RecordAiApprovalsOptions, RecordedAiApproval } from './approvals.js';
export { recordAiApprovals } from './approvals.js';
export type { AiSdkExecution, AiSdkResolver, LedgerAiToolOptions } from './tool.js';
export { ledgerAiTool } from './tool.js';
