/**
 * Every error text of the middleware that reaches a model or its caller, in one file so that they can be read and
 * reviewed together: each says what happened and what to do. Factories only; where an error is decided lives with
 * the code that decides it.
 */
import {
  type ConflictReason,
  OutcomeUnknownError,
  ToolFailure,
  ToolLedgerError,
  type ValidationIssue,
} from '../contract/errors.js';
import type { NotJsonError } from '../contract/json.js';
import type { UnknownOutcomeRule, UnknownRunContext } from '../contract/types.js';
import { classifyDriverError } from '../ledger/driver-errors.js';
import type { ClaimRow } from '../ledger/run-row.js';
import type { KeptLoad } from './background-saves.js';

// --- The call: context and input -------------------------------------------------------------------------------

export const keyRequired = (tool: string) =>
  new ToolLedgerError(
    'KEY_REQUIRED',
    `Tool "${tool}" changes the world and needs an idempotency key. Pass { key } naming this intent: reuse the same key when retrying the same request, and a new key for a new or changed request.`,
  );

export const inputNotJson = (tool: string, error: NotJsonError) =>
  new ToolLedgerError(
    'INPUT_INVALID',
    `Input for tool "${tool}" is not JSON (${error.message}). Nothing was saved; pass JSON-safe values.`,
    { cause: error, issues: [{ message: error.reason, path: [error.path] }] },
  );

export const validatorThrew = (tool: string, error: unknown) =>
  new ToolLedgerError(
    'INPUT_INVALID',
    `The input validator of tool "${tool}" threw: ${String(error)}. Nothing was saved.`,
    {
      cause: error,
    },
  );

export const inputInvalid = (tool: string, described: string, issues: readonly ValidationIssue[]) =>
  new ToolLedgerError(
    'INPUT_INVALID',
    `Invalid input for tool "${tool}": ${described}. Nothing was saved; fix the arguments and call again (a new key is not needed).`,
    { issues },
  );

export const ledgerClosed = (tool: string) =>
  new ToolLedgerError(
    'LEDGER_CLOSED',
    `Tool "${tool}" was called after ledger.close(). Create a new ledger with createLedger() to make more calls.`,
  );

export const closedWhileRunning = () =>
  new ToolLedgerError('LEDGER_CLOSED', 'The ledger closed while this handler was still running.');

export const readToolStep = (tool: string) =>
  new ToolLedgerError(
    'CONFIG_INVALID',
    `Tool "${tool}" is a read tool: it has no ledger row to record steps in. Use kind 'mutation' or 'job' for a tool whose steps change the world.`,
  );

// --- The claim -------------------------------------------------------------------------------------------------

export const keyReused = (tool: string, reason: ConflictReason) =>
  new ToolLedgerError(
    'KEY_REUSED',
    reason === 'params_mismatch'
      ? `This idempotency key was already used for tool "${tool}" with different arguments. Use a new key for a new or changed request; reuse a key only to retry the exact same request.`
      : `This idempotency key was already used for tool "${tool}" by a different user. Keys must be unique per intent; generate a new key.`,
    { conflictReason: reason },
  );

export const inProgress = (tool: string, retryAfterMs: number) =>
  new ToolLedgerError(
    'IN_PROGRESS',
    `Tool "${tool}" is still running the first call with this idempotency key. Retry with the same key in a moment to get its result; do not use a new key, or the action may run twice.`,
    { retryAfterMs },
  );

/** The answer for a run marked unknown: final until an operator settles it. */
export function unknownOutcome(tool: string, row: ClaimRow): ToolLedgerError {
  const why = row.error_json?.message;
  return new ToolLedgerError(
    'OUTCOME_UNKNOWN',
    `Tool "${tool}": an earlier attempt with this idempotency key was interrupted mid-effect, so whether it took effect is unknown, and nothing is repeated until an operator settles it (tool-ledger list --status unknown, then tool-ledger resolve). Do not retry with a new key, or the action may happen twice.${why ? ` Recorded: ${why}` : ''}`,
    { retryable: false },
  );
}

export function heldNotSaved(tool: string, error: unknown): ToolLedgerError {
  const detail =
    error instanceof ToolLedgerError && error.cause instanceof Error ? error.cause.message : String(error);
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `Tool "${tool}": this process holds the outcome of an earlier call with this key and could not save it yet (${detail}). Nothing runs again; retry with the same key once the database answers.`,
    { cause: error, retryable: true },
  );
}

export const contention = (tool: string) =>
  new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `Tool "${tool}": the key kept changing under concurrent claims. Retry the call with the same key.`,
  );

/** A claim whose answer is not a claim row: nothing is decided, so the call may be retried. */
export function strayAnswer(row: unknown): ToolLedgerError {
  const claim = (row as { claim?: unknown } | null)?.claim;
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `The database answered the idempotency claim with a row that is not a claim (claim=${JSON.stringify(claim) ?? 'undefined'}), so nothing was run. This happens when a connection pooler mixes up answers, for example LISTEN through PgBouncer in transaction mode. Retry with the same key; if it recurs, connect without the pooler or set preparedStatements: false.`,
    { retryable: true },
  );
}

/**
 * A row in a status tool-ledger never writes: the table was edited by hand (no CHECK constraint stops that since
 * migration 6). Refused with what to do, never guessed at.
 */
export function unknownStatus(row: { readonly id: string; readonly status: unknown }): ToolLedgerError {
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `The ledger row for this key (tool_runs id ${row.id}) has status ${JSON.stringify(row.status)}, which tool-ledger never writes: the table was edited by hand. Inspect the row (tool-ledger inspect), then set its status to 'in_progress', 'succeeded' or 'failed', or remove it (tool-ledger forget) so the key can run again.`,
    { retryable: false },
  );
}

// --- The execution ---------------------------------------------------------------------------------------------

export const resultNotJson = (tool: string, error: NotJsonError, alreadyRan: boolean) =>
  new ToolLedgerError(
    'RESULT_INVALID',
    `Tool "${tool}" returned a value that cannot be stored as JSON (${error.message}). ` +
      (alreadyRan
        ? 'The handler ran, so the key is spent to avoid repeating its side effect: return JSON-safe values and use a new key.'
        : 'Its transaction was rolled back; return JSON-safe values and retry.'),
    { cause: error, retryable: !alreadyRan },
  );

export const resultNotSaved = (tool: string, error: unknown) => {
  // The store's own message says nothing was decided, which stopped being true when the handler ran.
  const driverError = error instanceof ToolLedgerError && error.cause !== undefined ? error.cause : error;
  const detail = driverError instanceof Error ? driverError.message : String(driverError);
  // A failure that no wait mends (a privilege, a statement Citus refuses) says what to fix first.
  const { fix } = classifyDriverError(driverError);
  return new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `Tool "${tool}" ran, but the database failed while saving its result (${detail}).${fix ? ` ${fix}.` : ''} This process keeps the result and saves it as soon as the database answers. Retry with the same key to get it; do not use a new key, or the action may run twice.`,
    { cause: error, retryable: true },
  );
};

export const resultNotKept = (tool: string, error: unknown, load: KeptLoad) =>
  new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `Tool "${tool}" ran, but the database failed while saving its result, and this process already keeps ${load.count} unsaved ${load.count === 1 ? 'result' : 'results'} (${load.bytes} bytes; maxUnsavedResults=${load.maxCount}, maxUnsavedResultBytes=${load.maxBytes}), so this one was not kept. The action happened; a retry with the same key gets IN_PROGRESS until the lease lapses and then follows the tool's onUnknown rule (with the default 'rerun', it runs the tool again; 'fail' marks it unknown). Check the database before retrying, and raise the limits if outages outlast them.`,
    { cause: error, retryable: false },
  );

export const leaseLost = (tool: string) =>
  new ToolLedgerError(
    'LEASE_LOST',
    `Tool "${tool}" finished after its lease lapsed and another caller took over the key, so this result was discarded. Retry with the same key to get the current execution's result; raise leaseSeconds for long handlers.`,
  );

export const interrupted = (tool: string, tenant: string, attempt: number) =>
  new OutcomeUnknownError(
    `Tool "${tool}": attempt ${attempt - 1} held this key and never recorded an outcome (it crashed or lost its lease mid-handler), so its effect may or may not have happened, and the tool's onUnknown rule is 'fail'. The run is marked unknown and the handler is not run again. Check the effect, then settle the run: tool-ledger resolve --tenant ${tenant} --tool ${tool} --key <key> (--result JSON | --failed MESSAGE | --rerun).`,
  );

export const reportedUnknown = (
  tool: string,
  error: OutcomeUnknownError,
  onUnknown: UnknownOutcomeRule<UnknownRunContext, unknown>,
) =>
  new ToolFailure(
    `Tool "${tool}" reported that its outcome is unknown (${error.message}). Retry with the same key: onUnknown is ${onUnknown === 'rerun' ? "'rerun', so the handler runs again" : 'a lookup, which found nothing'}.`,
    { final: false, cause: error },
  );

export const stepsOnPglite = (tool: string, step: string) =>
  `Tool "${tool}" is transactional on the embedded PGlite, which has one connection: the handler's transaction holds it, so ctx.step("${step}") could not record the step outside it. Use Postgres (connectionString or pool) for a transactional tool with steps, or make the tool non-transactional.`;

// --- The lease -------------------------------------------------------------------------------------------------

export const leaseTakenOver = (leaseSeconds: number) =>
  new ToolLedgerError(
    'LEASE_LOST',
    `This execution's lease lapsed and another caller took over the key (leaseSeconds=${leaseSeconds}). Its result will be discarded. Renew the lease (ctx.renewLease) or raise leaseSeconds for long handlers.`,
  );

export const leaseNotRenewed = (leaseSeconds: number, error: unknown) =>
  new ToolLedgerError(
    'LEASE_LOST',
    `This execution's lease could not be renewed for ${leaseSeconds} s (${error instanceof Error ? error.message : String(error)}), so another caller may take over the key. Stop work that is not yet done; the result is saved only if the lease is still held.`,
    { cause: error },
  );

// --- Steps -----------------------------------------------------------------------------------------------------

export const stepNameInvalid = (tool: string, name: unknown, maxLength: number) =>
  new ToolLedgerError(
    'CONFIG_INVALID',
    `Tool "${tool}": ctx.step needs a name of 1-${maxLength} characters that is the same on every attempt (for example "charge"), got ${typeof name === 'string' ? `${name.length} characters` : typeof name}.`,
  );

export const stepNeedsFunction = (tool: string, name: string) =>
  new ToolLedgerError('CONFIG_INVALID', `Tool "${tool}": ctx.step("${name}") needs a function.`);

export const stepRuleInvalid = (tool: string, name: string, rule: unknown) =>
  new ToolLedgerError(
    'CONFIG_INVALID',
    `Tool "${tool}": ctx.step("${name}") has onUnknown ${JSON.stringify(rule)}; use 'rerun', 'fail' or a lookup function.`,
  );

export const stepReportedUnknown = (tool: string, name: string, error: OutcomeUnknownError, rule: unknown) =>
  new ToolFailure(
    `Step "${name}" of tool "${tool}" reported that its outcome is unknown (${error.message}). Retry with the same key: the next attempt ${rule === 'rerun' ? 'runs the step again' : 'looks the outcome up first'}.`,
    { final: false, cause: error },
  );

export const stepNotSaved = (tool: string, name: string, error: unknown) =>
  new ToolLedgerError(
    'LEDGER_UNAVAILABLE',
    `Step "${name}" of tool "${tool}" finished, but the database failed while saving its result (${error instanceof Error ? error.message : String(error)}). This process keeps the result: retry with the same key and it is saved, not run again.`,
    { cause: error, retryable: true },
  );

export const stepNotJson = (tool: string, name: string, what: string, error: NotJsonError) =>
  new ToolLedgerError(
    'RESULT_INVALID',
    `Step "${name}" of tool "${tool}" ${what} a value that cannot be stored as JSON (${error.message}). Its effect may have happened, so the key is spent: return JSON-safe values from steps and use a new key.`,
    { cause: error, retryable: false },
  );

export const stepUnknown = (
  tool: string,
  tenant: string,
  name: string,
  what: string,
  key: string,
  cause?: unknown,
) =>
  new OutcomeUnknownError(
    `Step "${name}" of tool "${tool}" ${what}, so its effect may or may not have happened, and its onUnknown rule is 'fail'. The run is marked unknown and nothing is repeated. Check the effect at the provider (its idempotency key is ${key}), then settle the run: tool-ledger resolve --tenant ${tenant} --tool ${tool} --key <key> (--result JSON | --failed MESSAGE | --rerun).`,
    { cause },
  );

export const stepLeaseLost = (tool: string, name: string) =>
  new ToolLedgerError(
    'LEASE_LOST',
    `Step "${name}" of tool "${tool}" could not be recorded: this execution's lease lapsed and another caller took over the key. Retry with the same key to get the current execution's result; raise leaseSeconds for long handlers.`,
  );
