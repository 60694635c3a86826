import type { CallEnd } from './call-end.js';
import type { ClaimCall } from './execution.js';
import type { VerdictKind, VerdictOf } from './verdict.js';

/** How the claim loop goes on after a verdict: the call ends, or it claims again after a race or a wait. */
export type Next = CallEnd | 'race' | 'wait';
/** What the claim loop does with one kind of verdict. */
export type Handler<K extends VerdictKind> = (verdict: VerdictOf<K>, call: ClaimCall) => Next | Promise<Next>;
/** One handler per verdict: a verdict without one is a compile error. */
export type HandlerTable = { readonly [K in VerdictKind]: Handler<K> };
