/**
 * What a claim sends, by name. The claim's parameters are numbered once, here, in this order: `claimParams` sends
 * the values in it and `CLAIM` gives each its placeholder, so no statement hard-codes a `$n`.
 */
export interface ClaimFields {
  readonly tenant: string;
  readonly tool: string;
  readonly key: string;
  readonly user: string | undefined;
  readonly paramsHash: string;
  readonly leaseOwner: string;
  readonly leaseSeconds: number;
  readonly ttlSeconds: number;
  readonly traceId: string | undefined;
  readonly spanId: string | undefined;
  /** The job id of a new run. */
  readonly jobId: string | undefined;
  /** Whether a lapsed lease may be taken over. */
  readonly allowLeaseTakeover: boolean;
  /** Whether the caller would wait for a run in flight (it registers as waiting, see `claimSql`). */
  readonly wouldWait: boolean;
}

/** The fresh run's columns, shared by the bare insert and the claim, then the claim's own two; with their types. */
const FRESH_RUN_TYPES = {
  tenant: 'text',
  tool: 'text',
  key: 'text',
  user: 'text',
  paramsHash: 'text',
  leaseOwner: 'text',
  leaseSeconds: 'float8',
  ttlSeconds: 'float8',
  traceId: 'text',
  spanId: 'text',
  jobId: 'text',
} as const;
const CLAIM_TYPES = {
  ...FRESH_RUN_TYPES,
  allowLeaseTakeover: 'boolean',
  wouldWait: 'boolean',
} as const satisfies Record<keyof ClaimFields, string>;

export type Placeholders<T> = { readonly [K in keyof T]: string };

/** `$1::text`, `$2::text`, ... in the object's order. */
function placeholders<T extends Record<string, string>>(types: T): Placeholders<T> {
  return Object.fromEntries(
    Object.entries(types).map(([name, type], i) => [name, `$${i + 1}::${type}`]),
  ) as Placeholders<T>;
}

export const CLAIM = placeholders(CLAIM_TYPES);
/** The types of the bare insert's parameters (`insertRunSql`), in order. */
export const FRESH_RUN_PARAMETER_TYPES = Object.freeze(Object.values(FRESH_RUN_TYPES));
const FRESH_RUN_NAMES = Object.freeze(Object.keys(FRESH_RUN_TYPES) as (keyof typeof FRESH_RUN_TYPES)[]);
const CLAIM_NAMES = Object.freeze(Object.keys(CLAIM_TYPES) as (keyof ClaimFields)[]);

function valuesOf(fields: ClaimFields, names: readonly (keyof ClaimFields)[]): unknown[] {
  const values = new Array<unknown>(names.length);
  // Absent optional fields travel as SQL NULL.
  for (let i = 0; i < names.length; i++) values[i] = fields[names[i]!] ?? null;
  return values;
}

/** The parameters of `claimSql`, in the order its placeholders number them. */
export function claimParams(fields: ClaimFields): unknown[] {
  return valuesOf(fields, CLAIM_NAMES);
}

/** The parameters of `insertRunSql`: the fresh run's fields only. */
export function insertRunParams(fields: ClaimFields): unknown[] {
  return valuesOf(fields, FRESH_RUN_NAMES);
}

/** What the claim's rules and its read (`claimReadSql`) judge a row by, and their types. */
const READ_TYPES = {
  tenant: 'text',
  tool: 'text',
  key: 'text',
  user: 'text',
  paramsHash: 'text',
  allowLeaseTakeover: 'boolean',
  wouldWait: 'boolean',
} as const satisfies Partial<Record<keyof ClaimFields, string>>;
export type JudgedPlaceholders = Placeholders<typeof READ_TYPES>;
export const READ = placeholders(READ_TYPES);
const READ_NAMES = Object.freeze(Object.keys(READ_TYPES) as (keyof typeof READ_TYPES)[]);

/** The parameters of `claimReadSql`. */
export function claimReadParams(fields: ClaimFields): unknown[] {
  return valuesOf(fields, READ_NAMES);
}

/**
 * What the taker of an approved row sends (`takeApprovedSql`): the fresh run's fields but the job id (the key, the
 * user and fingerprint it must match, its lease, TTL and trace), then the attempt it read; numbered here as the
 * claim's are.
 */
const { jobId: _jobId, ...TAKE_FIELD_TYPES } = FRESH_RUN_TYPES;
export const TAKE = placeholders({ ...TAKE_FIELD_TYPES, attempt: 'integer' });
const TAKE_NAMES = Object.freeze(Object.keys(TAKE_FIELD_TYPES) as (keyof typeof TAKE_FIELD_TYPES)[]);

/** The parameters of `takeApprovedSql`: the claim's fields in `TAKE`'s order, then the attempt read. */
export function takeParams(fields: ClaimFields, attempt: number): unknown[] {
  return [...valuesOf(fields, TAKE_NAMES), attempt];
}
