import { quoteIdent } from '../sql/names.js';

/**
 * The audit chain (migration 11): every decision a person takes on a run (approve, decline, forget, resolve), one
 * row each, hash-chained per tenant and append-only for the ledger's role (docs/ledger.md, "The audit chain").
 */
export function auditTable(schema: string): string {
  return `${quoteIdent(schema)}.tool_ledger_audit`;
}

/** The trigger function that refuses UPDATE, DELETE and TRUNCATE of the audit table. */
export function auditGuardFunction(schema: string): string {
  return `${quoteIdent(schema)}.tool_ledger_audit_append_only`;
}

/**
 * The DDL of the audit table and its guard, one statement per `;\n` (the migration runner splits on it). The guard
 * is a trigger, so even the table's owner (the ledger's role, which migrates it) is refused; the REVOKE a DBA adds
 * for a separate application role is in docs/ledger.md. A superuser can still disable triggers, which is what the
 * hash chain is for: `tool-ledger audit --verify` finds the entry deleted or altered behind the guard's back.
 */
export function auditTableDdl(schema: string): string {
  const t = auditTable(schema);
  const guard = auditGuardFunction(schema);
  return `CREATE TABLE ${t} (
  id bigint GENERATED ALWAYS AS IDENTITY,
  tenant_id text NOT NULL,
  at timestamptz NOT NULL,
  actor text NOT NULL,
  action text NOT NULL,
  tool_name text NOT NULL,
  key_hash text NOT NULL,
  run_id bigint,
  fingerprint text,
  approved_fingerprint text,
  reason text,
  detail jsonb,
  prev_hash text NOT NULL,
  hash text NOT NULL,
  UNIQUE (tenant_id, id),
  UNIQUE (tenant_id, prev_hash)
);
COMMENT ON TABLE ${t} IS 'tool-ledger: decisions on runs (approve, decline, forget, resolve), hash-chained per tenant, append-only';
CREATE FUNCTION ${guard}() RETURNS trigger LANGUAGE plpgsql AS $guard$ BEGIN RAISE EXCEPTION 'tool_ledger_audit is append-only: % refused', TG_OP USING ERRCODE = '42501'; END $guard$;
CREATE TRIGGER tool_ledger_audit_no_change BEFORE UPDATE OR DELETE ON ${t} FOR EACH ROW EXECUTE FUNCTION ${guard}();
CREATE TRIGGER tool_ledger_audit_no_truncate BEFORE TRUNCATE ON ${t} FOR EACH STATEMENT EXECUTE FUNCTION ${guard}()`;
}
