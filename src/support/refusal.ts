/**
 * Why support refused a decision, as a kind each front end maps to its own answer (the CLI to an exit code, the
 * console to an HTTP status) and a message that says what to do.
 */
export type RefusalKind =
  /** Nothing matches: no run, no unknown run. */
  | 'not_found'
  /** More than one run matches where the decision names one. */
  | 'ambiguous'
  /** The schema lacks a table the decision records into: run migrate. */
  | 'not_migrated'
  /** The key may hold personal data and there is no secret to record its HMAC. */
  | 'no_secret'
  /** The input is wrong: no actor, a result that is not JSON. */
  | 'invalid';

export class SupportRefusal extends Error {
  override readonly name = 'SupportRefusal';
  readonly kind: RefusalKind;

  constructor(kind: RefusalKind, message: string) {
    super(message);
    this.kind = kind;
  }
}
