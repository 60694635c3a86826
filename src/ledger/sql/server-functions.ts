import { insertRunSql } from './claim.js';
import { FRESH_RUN_PARAMETER_TYPES } from './claim-fields.js';
import { quoteIdent, runsTable } from './names.js';
import { COMPLETION_PARAMETER_TYPES, COMPLETION_SET, COMPLETION_TIMES, KEY_FENCE } from './runs.js';

/**
 * A first execution's two statements as server functions (migration 12), for a driver whose statements Postgres
 * parses and plans on every call: unnamed ones, behind a pooler in transaction mode or with
 * `preparedStatements: false`. PL/pgSQL keeps the plan of each statement in its body for the life of the server
 * connection, which a pooler hands from client to client, so only the short call is parsed and planned. Parsing
 * and planning the two statements took more of the server's time than running them (`bench/fleet.mjs bouncer`).
 * Each function is its statement, unchanged: the same parameters in the same order, the same answer.
 */
const INSERT_RUN = 'tool_ledger_insert_run';
const COMPLETE_RUN = 'tool_ledger_complete_run';

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

/** `insertRunSql` through its function: the same parameters (`insertRunParams`), no row when the key exists. */
export function insertRunCallSql(schema: string): string {
  return `SELECT id FROM ${fn(schema, INSERT_RUN)}(${call(FRESH_RUN_PARAMETER_TYPES)})`;
}

/** `completeSql` (by key) through its function: the same parameters and `Completed`'s columns; no row when fenced out. */
export function completeCallSql(schema: string): string {
  return `SELECT completed_at_ms, expires_in_ms FROM ${fn(schema, COMPLETE_RUN)}(${call(COMPLETION_PARAMETER_TYPES)})`;
}
