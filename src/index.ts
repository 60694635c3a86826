// Everything exported here is public API and follows semver. Internal modules stay unexported on purpose.
export { createLedger } from './create-ledger.js';
export type { Ledger, PurgeOptions } from './create-ledger.js';
export type { LedgerOptions } from './config.js';
export { ErrorCode, ToolFailure, ToolLedgerError, isToolLedgerError } from './contract/errors.js';
export type {
  ConflictReason,
  ToolFailureOptions,
  ToolLedgerErrorOptions,
  ValidationIssue,
} from './contract/errors.js';
export type {
  CallContext,
  HandlerContext,
  InvokeReport,
  JobState,
  JobStatus,
  Outcome,
  Queryable,
  RejectedReason,
  StoredError,
  ToolHandler,
  ToolKind,
  ToolOptions,
} from './contract/types.js';
export type { LedgerTool } from './middleware/tool.js';
export type { PgPoolLike, PgClientLike } from './ledger/drivers/pg.js';
export type { PGliteLike } from './ledger/drivers/pglite.js';
export { MAX_KEY_LENGTH } from './contract/keys.js';
export { deriveKey, type DeriveKeyInput } from './contract/derive-key.js';
export { migrationScript as migrationSql } from './ledger/migrations.js';
export type { Redactor, TelemetryOptions } from './telemetry/options.js';
