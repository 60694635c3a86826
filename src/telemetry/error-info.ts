import { isToolLedgerError } from '../contract/errors.js';
import type { Redactor } from './options.js';
import { safeExecute } from './safe.js';
import { ERROR_TYPE_OTHER } from './vocabulary.js';

export interface ErrorInfo {
  /** Low-cardinality `error.type`: the ToolLedgerError code, a class name, or `_OTHER`. */
  readonly type: string;
  readonly code: string | undefined;
  /** Scrubbed; undefined when there is none or the redactor failed. */
  readonly message: string | undefined;
  /** Scrubbed; undefined when there is none or the redactor failed. */
  readonly stack: string | undefined;
}

// A class name is code, not data, but a user-defined `name` could be anything; only identifier-like names pass.
const SAFE_TYPE = /^[A-Za-z_$][\w$.]{0,63}$/;

export function describeError(error: unknown, redactor: Redactor, withStack: boolean): ErrorInfo {
  const code = isToolLedgerError(error) ? error.code : undefined;
  let type: string = ERROR_TYPE_OTHER;
  if (code !== undefined) type = code;
  else if (error instanceof Error && SAFE_TYPE.test(error.name)) type = error.name;
  const rawMessage = error instanceof Error ? error.message : typeof error === 'string' ? error : undefined;
  const message =
    rawMessage === undefined
      ? undefined
      : safeExecute('redactor.redactText', () => redactor.redactText(rawMessage));
  const rawStack = withStack && error instanceof Error ? error.stack : undefined;
  const stack =
    rawStack === undefined
      ? undefined
      : safeExecute('redactor.redactText', () => redactor.redactText(rawStack));
  return {
    type,
    code,
    message: typeof message === 'string' ? message : undefined,
    stack: typeof stack === 'string' ? stack : undefined,
  };
}
