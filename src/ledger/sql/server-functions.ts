import type { Completed } from '../run-row.js';
import { insertRunSql } from './claim.js';
import { FRESH_RUN_PARAMETER_TYPES } from './claim-fields.js';
import { quoteIdent, runsTable } from './names.js';
import { COMPLETION_PARAMETER_TYPES, COMPLETION_SET, COMPLETION_TIMES, KEY_FENCE } from './runs.js';

/**
 * A first execution's two statements as server functions (migration 12, then 14), for a driver whose statements Postgres
 * parses and plans on every call: unnamed ones, behind a pooler in transaction mode or with
 * `preparedStatements: false`. PL/pgSQL keeps the plan of each statement in its body for the life of the server
 * connection, which a pooler hands from client to client, so only the short call is parsed and planned. Parsing
 * and planning the two statements took more of the server's time than running them (`bench/fleet.mjs bouncer`).
 * Each function is its statement, unchanged: the same parameters in the same order, the same answer.
 */
const INSERT_RUN = 'tool_ledger_insert_run';
const COMPLETE_RUN = 'tool_ledger_complete_run';
/**
 * Migration 14's pair: the same statements answering one scalar each, called in the select list. Migration 12's
 * return a table, so each call went through a function scan and a result set built row by row; as scalars the two
 * cost the server about a tenth less per first execution (pgbench, unnamed, 4 clients: 5,900-6,500 pairs/s against
 * 5,300-6,200). Migration 12's stay for processes of versions 12 and 13.
 */
const INSERT_RUN_ID = 'tool_ledger_insert_run_id';
const COMPLETE_RUN_TIMES = 'tool_ledger_complete_run_times';

const fn = (schema: string, name: string) => `${quoteIdent(schema)}.${name}`;
const call = (types: readonly string[]) => types.map((type, i) => `$${i + 1}::${type}`).join(', ');

/**
 * The two functions' DDL. No semicolon ends a line inside a body: migrations are split into statements there
 * (`applyMigrations`, `migrationScript`). `use_column`: a name in a statement is the table's column, never the
 * function's output of the same name.
 */
export function serverFunctionsSql(schema: string): string {
  return `CREATE OR REPLACE FUNCTION ${fn(schema, INSERT_RUN)}(${FRESH_RUN_PARAMETER_TYPES.join(', ')})
RETURNS TABLE (id text) LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
BEGIN
  ${insertRunSql(schema)} INTO id; IF FOUND THEN RETURN NEXT; END IF; END $fn$;
CREATE OR REPLACE FUNCTION ${fn(schema, COMPLETE_RUN)}(${COMPLETION_PARAMETER_TYPES.join(', ')})
RETURNS TABLE (completed_at_ms float8, expires_in_ms float8) LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE run_id bigint; wake boolean; BEGIN
  UPDATE ${runsTable(schema)} SET ${COMPLETION_SET}
  WHERE ${KEY_FENCE}
  RETURNING id, waiters, ${COMPLETION_TIMES} INTO run_id, wake, completed_at_ms, expires_in_ms; IF NOT FOUND THEN RETURN; END IF; IF wake THEN PERFORM pg_notify($11, run_id::text); END IF; RETURN NEXT; END $fn$`;
}

/**
 * Migration 14's scalar functions: `tool_ledger_insert_run_id` answers the new run's id, or NULL when the key
 * exists; `tool_ledger_complete_run_times` answers `[completed_at_ms, expires_in_ms]`, or NULL when the fence
 * refused. Same statements, same parameters, same notification as migration 12's.
 */
export function scalarServerFunctionsSql(schema: string): string {
  return `CREATE OR REPLACE FUNCTION ${fn(schema, INSERT_RUN_ID)}(${FRESH_RUN_PARAMETER_TYPES.join(', ')})
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE run_id text; BEGIN
  ${insertRunSql(schema)} INTO run_id; RETURN run_id; END $fn$;
CREATE OR REPLACE FUNCTION ${fn(schema, COMPLETE_RUN_TIMES)}(${COMPLETION_PARAMETER_TYPES.join(', ')})
RETURNS float8[] LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE run_id bigint; wake boolean; completed_at_ms float8; expires_in_ms float8; BEGIN
  UPDATE ${runsTable(schema)} SET ${COMPLETION_SET}
  WHERE ${KEY_FENCE}
  RETURNING id, waiters, ${COMPLETION_TIMES} INTO run_id, wake, completed_at_ms, expires_in_ms; IF NOT FOUND THEN RETURN NULL; END IF; IF wake THEN PERFORM pg_notify($11, run_id::text); END IF; RETURN ARRAY[completed_at_ms, expires_in_ms]; END $fn$`;
}

/** `insertRunSql` through migration 14's function: the same parameters (`insertRunParams`); `id` NULL when the key exists. */
export function insertRunIdCallSql(schema: string): string {
  return `SELECT ${fn(schema, INSERT_RUN_ID)}(${call(FRESH_RUN_PARAMETER_TYPES)}) AS id`;
}

/** `completeSql` (by key) through migration 14's function: the same parameters; `times` NULL when fenced out. */
export function completeTimesCallSql(schema: string): string {
  return `SELECT ${fn(schema, COMPLETE_RUN_TIMES)}(${call(COMPLETION_PARAMETER_TYPES)}) AS times`;
}

/** `completeTimesCallSql`'s `times`, in the order the function builds its array, as `completeSql`'s row. */
export function completedFromTimes(times: readonly number[] | null | undefined): Completed | undefined {
  return times ? { completed_at_ms: times[0]!, expires_in_ms: times[1]! } : undefined;
}

/** `insertRunSql` through migration 12's function: the same parameters (`insertRunParams`), no row when the key exists. */
export function insertRunCallSql(schema: string): string {
  return `SELECT id FROM ${fn(schema, INSERT_RUN)}(${call(FRESH_RUN_PARAMETER_TYPES)})`;
}

/** `completeSql` (by key) through its function: the same parameters and `Completed`'s columns; no row when fenced out. */
export function completeCallSql(schema: string): string {
  return `SELECT completed_at_ms, expires_in_ms FROM ${fn(schema, COMPLETE_RUN)}(${call(COMPLETION_PARAMETER_TYPES)})`;
}
