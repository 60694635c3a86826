import { ToolFailure, type ToolLedgerError } from '../../contract/errors.js';

/** How the adapter names the key to the model: an argument it must send, or a key the runner derives. */
export type KeySource = { readonly kind: 'argument'; readonly field: string } | { readonly kind: 'runner' };

/**
 * Text a model can act on for each stable error code. The core messages speak to developers ("pass { key }");
 * a model needs to hear which argument to change and whether to retry with the same key or a new one.
 */
export function errorText(error: ToolLedgerError, tool: string, keySource: KeySource): string {
  const byArgument = keySource.kind === 'argument';
  const keyName = byArgument ? keySource.field : 'idempotency key';
  // With runner-issued keys, the model's only lever is the tool call itself: a new call carries a new key.
  const newIntent = byArgument ? `use a new ${keyName}` : 'make a new tool call';
  const retryHint =
    error.retryAfterMs === undefined
      ? ''
      : ` Wait about ${Math.max(1, Math.ceil(error.retryAfterMs / 1000))} s first.`;
  switch (error.code) {
    case 'KEY_REQUIRED':
      return byArgument
        ? `${error.code}: tool "${tool}" changes the world and needs the "${keyName}" argument. Send a new unique string (for example a UUID) for this request, and reuse that same value only when retrying this exact request.`
        : `${error.code}: tool "${tool}" needs an idempotency key and none could be derived for this call. ${error.message}`;
    case 'KEY_INVALID':
      return `${error.code}: the ${keyName} is not usable: ${error.message}`;
    case 'KEY_REUSED':
      if (error.conflictReason === 'user_mismatch') {
        return `${error.code}: this ${keyName} was already used by a different user. Nothing was done; ${newIntent} for this request.`;
      }
      return `${error.code}: this ${keyName} was already used with different arguments. Nothing was done; ${newIntent} for a new or changed request${byArgument ? `, and reuse a ${keyName} only to retry the exact same request` : ''}.`;
    case 'IN_PROGRESS':
      return byArgument
        ? `${error.code}: the first call with this ${keyName} is still running. Retry with the same ${keyName} to get its result; do not use a new one, or the action may run twice.${retryHint}`
        : `${error.code}: this request is already being carried out by an earlier execution. Do not repeat it as a new tool call, or the action may run twice.${retryHint}`;
    case 'INPUT_INVALID': {
      const issues = (error.issues ?? [])
        .map((issue) => (issue.path?.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
        .join('; ');
      return `${error.code}: the arguments for tool "${tool}" are invalid${issues ? ` (${issues})` : ''}. Nothing was done; fix the arguments and call again.`;
    }
    case 'LEDGER_UNAVAILABLE':
    case 'LEASE_LOST':
      return byArgument
        ? `${error.code}: ${error.message} Retry with the same ${keyName}; the action will not run twice.${retryHint}`
        : `${error.code}: ${error.message}${retryHint}`;
    case 'TOOL_FAILED':
      if (error instanceof ToolFailure) {
        const reason = error.reason ? ` (${error.reason})` : '';
        if (!error.final) {
          return `${error.code}${reason}: ${error.message} ${byArgument ? `You may retry with the same ${keyName}.` : 'You may try again.'}`;
        }
        return `${error.code}${reason}: ${error.message} This failure is final for this ${byArgument ? keyName : 'request'}: ${byArgument ? 'retrying with it returns the same failure' : 'retrying it returns the same failure'}. Only if the user wants to try again (for example with changed details), ${newIntent}.`;
      }
      return `${error.code}: ${error.message}`;
    default:
      return `${error.code}: ${error.message}`;
  }
}

/** The JSON view of an error that adapters attach next to the text, for programs rather than models. */
export function errorPayload(error: ToolLedgerError): Record<string, unknown> {
  const json = error.toJSON();
  if (error instanceof ToolFailure) json.replayed = error.replayed;
  return json;
}
