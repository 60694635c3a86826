/** A run whose lease still holds: its owner is (presumably) working on it. */
export const leaseLive = (alias: string) =>
  `(${alias}.status = 'in_progress' AND ${alias}.lease_expires_at > now())`;

/** Past its TTL, so the key counts as new; a live lease always outlives the TTL. */
export const expired = (alias: string) => `(${alias}.expires_at <= now() AND NOT ${leaseLive(alias)})`;

/**
 * A timestamp as whole milliseconds since the epoch, truncated as the drivers truncate when they parse one into a
 * `Date` (so a `Date` built from it equals the one a later read of the column gives), and a float8 the driver reads
 * as a number without the date parser, which is dearer.
 */
export const epochMs = (column: string) =>
  `round(extract(epoch FROM date_trunc('milliseconds', ${column})) * 1000)::float8`;

/** Milliseconds from the database's `now()` to a timestamp: a float8 the driver reads as a number. */
export const msUntil = (column: string) => `date_part('epoch', ${column} - now()) * 1000`;

/**
 * What every read returns of a row, in the shape `RunRow` expects, with the lease flag SQL decides so TypeScript
 * never re-derives the rules. Kept short: every column costs the driver a field to describe and parse per call.
 */
export const RUN_COLUMNS = (
  a: string,
) => `${a}.id::text AS id, ${a}.user_id, ${a}.parameter_hash, ${a}.status, ${a}.final,
  ${a}.attempt, ${a}.lease_owner, ${msUntil(`${a}.lease_expires_at`)} AS lease_remaining_ms, ${a}.result_json,
  ${a}.error_json, ${a}.job_id, ${a}.trace_id, ${a}.span_id, ${a}.completed_at,
  ${msUntil(`${a}.expires_at`)} AS expires_in_ms, ${leaseLive(a)} AS lease_live`;

/** The partition key the claim function returns: `expires_at` exactly, in microseconds, in any session time zone. */
export const partitionKeyOf = (alias: string) =>
  `to_char(${alias}.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
