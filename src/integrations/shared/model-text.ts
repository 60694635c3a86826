import { type ErrorCode, ToolFailure, type ToolLedgerError } from '../../contract/errors.js';
import type { SuccessOutcome } from '../../contract/outcomes.js';
import type { InvokeReport, JobStatus, ToolKind } from '../../contract/types.js';

/**
 * Where the key of one call came from, as the model must hear it: an argument the model sent (and can send
 * again), a key the runner derived from the tool call (the model's only lever is the tool call itself: a new
 * call carries a new key), or none at all (read tools).
 */
export type KeyVoice =
  | { readonly kind: 'argument'; readonly field: string }
  | { readonly kind: 'call' }
  | { readonly kind: 'none' };

/** The tool a text speaks about, and how its caller names the intent. */
export interface TextSubject {
  readonly tool: string;
  readonly kind: ToolKind;
  readonly key: KeyVoice;
}

type Text = (error: ToolLedgerError, subject: TextSubject) => string;

/** Ends a message taken from a handler with a full stop, so the next sentence does not run into it. */
export function sentence(text: string): string {
  const trimmed = text.trim();
  if (trimmed === '') return '';
  return /[.!?…)"']$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

function waitHint(error: ToolLedgerError): string {
  return error.retryAfterMs === undefined
    ? 'Wait a few seconds'
    : `Wait about ${Math.max(1, Math.ceil(error.retryAfterMs / 1000))} s`;
}

/** "with the same arguments and the same "idempotency_key"", or "with the same arguments" for runner keys. */
function same(subject: TextSubject): string {
  return subject.key.kind === 'argument'
    ? `with the same arguments and the same "${subject.key.field}"`
    : 'with the same arguments';
}

const NOT_SET_UP = 'Do not retry; tell the user that this tool is not set up correctly on the server.';

/**
 * Every code a model can meet, each answering three questions: what happened, whether anything was done, and
 * exactly what to do next, with this tool's argument names. No code may lack a text (the `satisfies` below),
 * and no text names an API of this library: the model cannot call one.
 */
const ERROR_TEXTS = {
  KEY_REQUIRED: (_error, s) =>
    s.key.kind === 'argument'
      ? `${s.tool} was not run: it changes things and needs the "${s.key.field}" argument. Nothing was done. Call it again with "${s.key.field}" set to a new unique string for this request (for example a UUID), and send that same value again only to retry this exact request.`
      : `${s.tool} was not run: it changes things, and no idempotency key came with this call (the application supplies it, not you). Nothing was done. ${NOT_SET_UP}`,
  KEY_INVALID: (_error, s) =>
    s.key.kind === 'argument'
      ? `The "${s.key.field}" you sent is not usable: it must be a non-empty string of printable characters, at most 255 long. Nothing was done. Call ${s.tool} again with a valid "${s.key.field}", for example a new UUID.`
      : `${s.tool} was not run: the idempotency key made for this call is not usable. Nothing was done. ${NOT_SET_UP}`,
  CONTEXT_INVALID: (_error, s) =>
    `${s.tool} was not run: the account or user this call is made for is not valid on the server. Nothing was done. Do not retry; tell the user their account could not be identified.`,
  INPUT_INVALID: (error, s) => {
    const issues = (error.issues ?? [])
      .map((issue) => (issue.path?.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
      .join('; ');
    const keep = s.key.kind === 'argument' ? `; you may keep the same "${s.key.field}"` : '';
    return `The arguments for ${s.tool} are invalid${issues ? ` (${issues})` : ''}. Nothing was done. Fix those arguments and call ${s.tool} again${keep}.`;
  },
  KEY_REUSED: (error, s) => {
    const byOtherUser = error.conflictReason === 'user_mismatch';
    if (s.key.kind === 'argument') {
      const field = s.key.field;
      return byOtherUser
        ? `This "${field}" was already used by a different user. Nothing was done. Call ${s.tool} again with a new "${field}".`
        : `This "${field}" was already used for a request with different arguments. Nothing was done. If this is a new or changed request, call ${s.tool} again with a new "${field}"; send an earlier "${field}" only to retry that exact request with its original arguments.`;
    }
    return byOtherUser
      ? `This tool call was already carried out for a different user. Nothing was done. Make a new tool call if the user wants this request.`
      : `This tool call was already carried out with different arguments. Nothing was done again. If the user wants the changed request, make a new tool call for it.`;
  },
  IN_PROGRESS: (error, s) =>
    s.key.kind === 'argument'
      ? `An earlier call of ${s.tool} with this "${s.key.field}" is still running. This call did nothing. ${waitHint(error)}, then call ${s.tool} again ${same(s)} to get its result; a new "${s.key.field}" could make the action happen twice.`
      : `This request is already being carried out by an earlier run of the same tool call. This call did nothing. Do not repeat it as a new tool call, or the action may happen twice; tell the user it is in progress.`,
  LEDGER_UNAVAILABLE: (error, s) =>
    s.key.kind === 'argument'
      ? `The server could not record this call of ${s.tool}, so it is not known whether the action happened. ${waitHint(error)}, then call ${s.tool} again ${same(s)}: the action will not happen twice.`
      : `The server could not record this call of ${s.tool}, so it is not known whether the action happened. Do not repeat it as a new tool call, or it may happen twice; tell the user to try again later.`,
  LEASE_LOST: (_error, s) =>
    s.key.kind === 'argument'
      ? `This call of ${s.tool} stopped before finishing because another worker took the request over, so it is not known yet whether the action happened. Call ${s.tool} again ${same(s)} to get the result: the action will not happen twice.`
      : `This call of ${s.tool} stopped before finishing because another worker took the request over, so it is not known yet whether the action happened. Do not repeat it as a new tool call; tell the user it is still being handled.`,
  RESULT_INVALID: (_error, s) =>
    `${s.tool} ran, but its result was refused as invalid, so the action may have happened. Calling it again ${same(s)} returns this same error. Do not retry; tell the user the action needs checking.`,
  TOOL_FAILED: (error, s) => {
    const failure = error instanceof ToolFailure ? error : undefined;
    const what = sentence(error.message) || `${s.tool} failed.`;
    const replayed = failure?.replayed ? ' This failure was recorded earlier; nothing was done again.' : '';
    if (s.kind === 'read') {
      return `${what} Nothing was changed: ${s.tool} only reads. Call it again only if something has changed.`;
    }
    if (failure !== undefined && !failure.final) {
      return `${what} ${s.tool} did not complete this request, and nothing was recorded as done. You may call ${s.tool} again ${same(s)}.`;
    }
    return s.key.kind === 'argument'
      ? `${what}${replayed} ${s.tool} did not complete this request, and this is final: calling again with the same "${s.key.field}" returns this same failure. If the user wants to try again (for example with changed details), call ${s.tool} with a new "${s.key.field}".`
      : `${what}${replayed} ${s.tool} did not complete this request, and this is final for this tool call. If the user wants to try again (for example with changed details), make a new tool call.`;
  },
  CONFIG_INVALID: (_error, s) => `${s.tool} was not run. Nothing was done. ${NOT_SET_UP}`,
  LEDGER_CLOSED: (_error, s) =>
    `The server is shutting down and did not run ${s.tool}. Nothing was done. Call it again in a moment ${same(s)}.`,
  OUTCOME_UNKNOWN: (_error, s) =>
    `An earlier attempt of this request to ${s.tool} was interrupted while it acted, so it is not known whether it took effect. ${s.tool} will not repeat it until an operator has checked. Do not call ${s.tool} again for this request, with this or a new key; tell the user it needs checking.`,
  ACCESS_DENIED: (error, s) =>
    `${sentence(error.message)} Nothing was done. Do not retry ${s.tool} for this caller, with this or a new key; tell the user they are not allowed to use it.`,
  RATE_LIMITED: (error, s) =>
    `${sentence(error.message)} Nothing was done. ${waitHint(error)}, then call ${s.tool} again ${same(s)}.`,
  APPROVAL_REQUIRED: (error, s) => {
    const key = error.approval?.key === undefined ? '' : ` under the key "${error.approval.key}"`;
    return s.key.kind === 'argument'
      ? `${s.tool} was not run: a person must approve this request first, and it is now waiting for them${key}. Nothing was done. Tell the user it awaits approval; once approved, call ${s.tool} again ${same(s)} to run it. Do not use a new "${s.key.field}": that would ask for a second approval.`
      : `${s.tool} was not run: a person must approve this request first, and it is now waiting for them${key}. Nothing was done. Tell the user it awaits approval; it runs when this same tool call is made again after the approval.`;
  },
  APPROVAL_DECLINED: (error, s) => {
    const reason = error.approval?.decision?.reason;
    return `A person declined this request to ${s.tool}${reason ? `, saying: ${sentence(reason)}` : '.'} Nothing was done, and this is final for this request. Do not retry it; tell the user it was declined and why.`;
  },
  APPROVAL_EXPIRED: (_error, s) =>
    `Nobody approved this request to ${s.tool} in time, so it expired. Nothing was done, and this is final for this request. Tell the user; if they still want it, it needs a new request${s.key.kind === 'argument' ? ` with a new "${s.key.field}"` : ''}.`,
  APPROVAL_NOT_PENDING: (_error, s) =>
    `There is no request of ${s.tool} waiting for a decision under this key. Nothing was changed. ${NOT_SET_UP}`,
  APPROVAL_ALREADY_DECIDED: (error, s) => {
    const d = error.approval?.decision;
    return `This request to ${s.tool} was already ${d ? `${d.decision} by ${d.by}` : 'decided'}, so this decision was not recorded. Nothing was changed. Do not decide it again; tell the user who decided it.`;
  },
  APPROVAL_ACTOR_REQUIRED: (_error, s) =>
    `A decision on ${s.tool} was refused because it did not say who took it. Nothing was changed. ${NOT_SET_UP}`,
} as const satisfies Record<ErrorCode, Text>;

/** The text a model reads for a ledger error: the stable code, then what happened and what to do next. */
export function errorText(error: ToolLedgerError, subject: TextSubject): string {
  const reason = error instanceof ToolFailure && error.reason ? ` (${error.reason})` : '';
  return `${error.code}${reason}: ${ERROR_TEXTS[error.code](error, subject)}`;
}

type Report = Pick<InvokeReport<unknown>, 'outcome' | 'kind' | 'completedAt'>;

const NOTICES = {
  executed: () => undefined,
  approved: () => undefined,
  replayed: (tool: string, report: Report) =>
    report.kind === 'job'
      ? `Replayed: ${tool} already started this job earlier and did not start it again; this is its current status.`
      : `Replayed: ${tool} already did this request ${report.completedAt ? `at ${report.completedAt.toISOString()}` : 'earlier'} and did not do it again; this is the original result.`,
  polled: (tool: string) =>
    `Replayed: ${tool} already started this job earlier and did not start it again; this is its current status.`,
} as const satisfies Record<SuccessOutcome, (tool: string, report: Report) => string | undefined>;

/** Whether an outcome did nothing again (a replay or a job poll): what adapters put in `replayed`. */
const REPLAYED = {
  executed: false,
  approved: false,
  replayed: true,
  polled: true,
} as const satisfies Record<SuccessOutcome, boolean>;

export function wasReplayed(outcome: SuccessOutcome): boolean {
  return REPLAYED[outcome];
}

/** The one sentence that tells a model nothing was done again (a replay or a job poll); none for an execution. */
export function replayNotice(tool: string, report: Report): string | undefined {
  return NOTICES[report.outcome](tool, report);
}

/** What a model reads of a successful call: the value's JSON, after the replay sentence when it applies. */
export function resultText(tool: string, report: Report & Pick<InvokeReport<unknown>, 'value'>): string {
  const json = JSON.stringify(report.value ?? null);
  const notice = replayNotice(tool, report);
  return notice === undefined ? json : `${notice}\n${json}`;
}

/** The JSON view of an error that adapters attach next to the text, for programs rather than models. */
export function errorPayload(error: ToolLedgerError): Record<string, unknown> {
  const json = error.toJSON();
  if (error instanceof ToolFailure) json.replayed = error.replayed;
  return json;
}

/** Job status in the words the status tool takes (`job_id`), so the model can pass it on as it reads it. */
export function jobView(status: JobStatus): Record<string, unknown> {
  const { jobId, ...rest } = status;
  return { job_id: jobId, ...rest };
}

const JOB_STATE_TEXT = {
  running: 'is still running',
  succeeded: 'has succeeded',
  failed: 'has failed',
  abandoned: 'was abandoned: its worker stopped before finishing',
  unknown: 'was interrupted while it acted, and whether it took effect is unknown',
} as const satisfies Record<JobStatus['status'], string>;

/** What a job call or a status poll says about a job, and what to call next. */
export function jobText(
  status: JobStatus,
  names: { readonly jobTool: string; readonly statusTool: string; readonly keyField: string },
): string {
  const follow = `Call ${names.statusTool} with {"job_id": "${status.jobId}"} to follow it.`;
  const next = {
    running: follow,
    succeeded: 'Its result follows.',
    failed: status.error ? `The error: ${sentence(status.error.message)}` : '',
    abandoned: `To resume it, call ${names.jobTool} again with the same arguments and the same "${names.keyField}" as the first time.`,
    unknown: 'An operator must check it before anything is repeated; do not start it again with a new key.',
  } as const satisfies Record<JobStatus['status'], string>;
  return `Job ${status.jobId} ${JOB_STATE_TEXT[status.status]}. ${next[status.status]}`.trim();
}
