// Everything exported here is public API and follows semver. Internal modules stay unexported on purpose.

export type { LedgerOptions } from './config/options.js';
export type {
  ApprovalContext,
  ApprovalDecision,
  ApprovalRule,
  ApprovalTarget,
  ApprovalVerdict,
  ApproveRequest,
  AwaitingApproval,
  DeclineRequest,
  ListApprovalsOptions,
} from './contract/approval.js';
export { type DeriveKeyInput, deriveKey } from './contract/derive-key.js';
export type {
  ApprovalErrorDetail,
  ConflictReason,
  ToolFailureOptions,
  ToolLedgerErrorOptions,
  ValidationIssue,
} from './contract/errors.js';
export {
  ErrorCode,
  isToolLedgerError,
  OutcomeUnknownError,
  ToolFailure,
  ToolLedgerError,
} from './contract/errors.js';
export { MAX_KEY_LENGTH } from './contract/keys.js';
export type {
  CallContext,
  HandlerContext,
  InvokeReport,
  JobState,
  JobStatus,
  Outcome,
  Queryable,
  RejectedReason,
  StepContext,
  StepOptions,
  StoredError,
  ToolHandler,
  ToolKind,
  ToolOptions,
  UnknownOutcomeRule,
  UnknownRunContext,
} from './contract/types.js';
export type { CloseOptions, Ledger, PurgeOptions } from './create-ledger.js';
export { createLedger } from './create-ledger.js';
export type { PgClientLike, PgPoolLike } from './ledger/drivers/pg/client.js';
export type { PGliteLike } from './ledger/drivers/pglite.js';
export {
  type HostPort,
  type LoadBalanceHosts,
  type ReadWriteClientOptions,
  readWriteClient,
  type TargetSessionAttrs,
} from './ledger/drivers/read-write.js';
export { migrationScript as migrationSql } from './ledger/migrations.js';
export type { LedgerTool } from './middleware/tool.js';
export { hashKey } from './telemetry/key-hash.js';
export type { Redactor, TelemetryOptions } from './telemetry/options.js';
export { createRedactor, REDACTED, type RedactorOptions } from './telemetry/redact/default-redactor.js';
