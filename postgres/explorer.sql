-- The ledger explorer's read-only access: a role that can read one view, tool_ledger_explorer.ledger_runs, and
-- nothing else. The view leaves out what may hold personal data: user ids, results, error messages and reasons
-- (free text), and idempotency keys that do not look safe to show. Every key also comes as key_hash, the HMAC
-- that tool-ledger's telemetry emits as tool_ledger.idempotency.key_hash under the same secret, so a support
-- person can go from a row to its trace in Jaeger by hash too (`tool-ledger hash-key`). The dashboard's key
-- search takes the raw key and hashes it here (key_hash_of), for keys the ledger holds.
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -f postgres/explorer.sql \
--     -v ledger_schema=tool_ledger -v explorer_schema=tool_ledger_explorer \
--     -v reader=tool_ledger_grafana -v reader_password="$GRAFANA_PG_PASSWORD" \
--     -v key_hash_secret="${TOOL_LEDGER_KEY_HASH_SECRET:-}"
--
-- Run it as the ledger's owner (or a superuser), before or after the ledger's migrations: the view reads the
-- ledger through a function whose body is resolved when it runs, so the docker-compose stack sets it up on the
-- database's first start (postgres/init-explorer.sh). Running it again updates the password and the secret.
-- Leave key_hash_secret empty when the services set no TOOL_LEDGER_KEY_HASH_SECRET: key_hash then uses the
-- deployment's secret in the ledger schema (tool_ledger_settings), read on every query, so it follows a
-- `tool-ledger rotate-key-secret` at once; it is null while the schema holds none.

SET explorer.ledger_schema = :'ledger_schema';
SET explorer.schema = :'explorer_schema';
SET explorer.reader = :'reader';
SET explorer.reader_password = :'reader_password';
SET explorer.key_hash_secret = :'key_hash_secret';

DO $setup$
DECLARE
  ledger text := current_setting('explorer.ledger_schema');
  explorer text := current_setting('explorer.schema');
  reader text := current_setting('explorer.reader');
  secret bytea := convert_to(current_setting('explorer.key_hash_secret'), 'UTF8');
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = reader) THEN
    EXECUTE format('CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION', reader);
  END IF;
  EXECUTE format('ALTER ROLE %I PASSWORD %L', reader, current_setting('explorer.reader_password'));
  -- The dashboards name the view without a schema; every connection of the role finds it, and nothing else.
  EXECUTE format('ALTER ROLE %I SET search_path = %I', reader, explorer);
  EXECUTE format('ALTER ROLE %I SET default_transaction_read_only = on', reader);
  EXECUTE format('ALTER ROLE %I SET statement_timeout = %L', reader, '30s');

  EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', explorer);
  EXECUTE format('REVOKE ALL ON SCHEMA %I FROM PUBLIC', explorer);

  -- HMAC-SHA256 (RFC 2104) with built-in sha256(): a secret given here is kept as its inner and outer pads in a
  -- table only the owner reads, so neither the secret nor the pads appear in a function's source, which every
  -- role can see. Without one, the pads are made from the ledger's stored secret when a query runs.
  EXECUTE format($fn$
    CREATE OR REPLACE FUNCTION %I.hmac_pads(secret bytea, OUT ipad bytea, OUT opad bytea)
    LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp
    AS $body$
    DECLARE
      k bytea := secret;
    BEGIN
      IF length(k) > 64 THEN k := sha256(k); END IF;
      k := k || decode(repeat('00', 64 - length(k)), 'hex');
      ipad := k;
      opad := k;
      FOR i IN 0..63 LOOP
        ipad := set_byte(ipad, i, get_byte(k, i) # 54);
        opad := set_byte(opad, i, get_byte(k, i) # 92);
      END LOOP;
    END
    $body$
  $fn$, explorer);
  EXECUTE format('REVOKE ALL ON FUNCTION %I.hmac_pads(bytea) FROM PUBLIC', explorer);
  EXECUTE format('CREATE TABLE IF NOT EXISTS %I.key_hash_pads (ipad bytea NOT NULL, opad bytea NOT NULL)', explorer);
  EXECUTE format('REVOKE ALL ON %I.key_hash_pads FROM PUBLIC', explorer);
  EXECUTE format('DELETE FROM %I.key_hash_pads', explorer);
  IF length(secret) > 0 THEN
    EXECUTE format('INSERT INTO %1$I.key_hash_pads (ipad, opad) SELECT ipad, opad FROM %1$I.hmac_pads($1)', explorer)
      USING secret;
  END IF;

  -- The pads a query hashes under: the secret given to this script, else the ledger's stored one (none before
  -- the ledger's migration 4 or its first start). Not granted to the reader: only the owner's view function calls it.
  EXECUTE format($fn$
    CREATE OR REPLACE FUNCTION %1$I.key_hash_pads_now(OUT ipad bytea, OUT opad bytea)
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
    AS $body$
    BEGIN
      SELECT p.ipad, p.opad INTO ipad, opad FROM %1$I.key_hash_pads p LIMIT 1;
      IF ipad IS NOT NULL OR to_regclass(%3$L) IS NULL THEN RETURN; END IF;
      SELECT h.ipad, h.opad INTO ipad, opad
      FROM %2$I.tool_ledger_settings s, %1$I.hmac_pads(convert_to(s.value, 'UTF8')) h
      WHERE s.name = 'key_hash_secret';
    END
    $body$
  $fn$, explorer, ledger, format('%I.tool_ledger_settings', ledger));
  EXECUTE format('REVOKE ALL ON FUNCTION %I.key_hash_pads_now() FROM PUBLIC', explorer);

  -- Resolved when called, so this works before the ledger's tables exist.
  SET LOCAL check_function_bodies = off;
  -- The function's columns grew (id, for the console's run pages); a function's result type cannot be replaced in
  -- place, so the view and the function are made anew.
  EXECUTE format('DROP VIEW IF EXISTS %I.ledger_runs', explorer);
  EXECUTE format('DROP FUNCTION IF EXISTS %I.ledger_runs_of_owner()', explorer);
  EXECUTE format($fn$
    CREATE OR REPLACE FUNCTION %1$I.ledger_runs_of_owner()
    RETURNS TABLE (
      tenant_id text, tool_name text, idempotency_key text, key_hash text, status text, final boolean,
      attempt integer, conflict_count integer, last_conflict_at timestamptz, parameter_hash text, job_id text,
      lease_owner text, lease_expires_at timestamptz, created_at timestamptz, started_at timestamptz,
      updated_at timestamptz, completed_at timestamptz, expires_at timestamptz, error_name text,
      error_code text, trace_id text, id bigint)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $body$
      SELECT r.tenant_id, r.tool_name,
        -- Shown only when it cannot be an email, a phone, card or account number, or free text; a label:value
        -- key is hidden, as telemetry hashes it.
        CASE WHEN r.idempotency_key ~ '^[A-Za-z0-9_.-]{1,128}$' AND r.idempotency_key !~ '[0-9][0-9 .-]{5,}[0-9]'
          THEN r.idempotency_key END,
        encode(sha256(p.opad || sha256(p.ipad || convert_to(r.idempotency_key, 'UTF8'))), 'hex'),
        r.status, r.final, r.attempt, r.conflict_count, r.last_conflict_at, r.parameter_hash, r.job_id,
        r.lease_owner, r.lease_expires_at, r.created_at, r.started_at, r.updated_at, r.completed_at, r.expires_at,
        r.error_json->>'name', r.error_json->>'code', r.trace_id, r.id
      FROM %2$I.tool_runs r LEFT JOIN %1$I.key_hash_pads_now() p ON true
    $body$
  $fn$, explorer, ledger);
  EXECUTE format('REVOKE ALL ON FUNCTION %I.ledger_runs_of_owner() FROM PUBLIC', explorer);

  -- Support types the raw key; this gives its key_hash, but only for a key the ledger holds, so the role cannot
  -- hash candidate emails to reverse the hashes in Jaeger: it learns nothing a search by key would not show.
  EXECUTE format($fn$
    CREATE OR REPLACE FUNCTION %1$I.key_hash_of(raw_key text)
    RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $body$
    BEGIN
      -- PL/pgSQL rather than SQL: on a ledger distributed with Citus, Citus cannot plan a SQL function's statement
      -- that reads a distributed table with the function's parameter in it ("could not create distributed plan").
      IF NOT EXISTS (SELECT 1 FROM %2$I.tool_runs r WHERE r.idempotency_key = raw_key) THEN
        RETURN NULL;
      END IF;
      RETURN (SELECT encode(sha256(p.opad || sha256(p.ipad || convert_to(raw_key, 'UTF8'))), 'hex')
        FROM %1$I.key_hash_pads_now() p);
    END
    $body$
  $fn$, explorer, ledger);
  EXECUTE format('REVOKE ALL ON FUNCTION %I.key_hash_of(text) FROM PUBLIC', explorer);

  -- The dashboard's text boxes reach SQL percent-encoded (Grafana's :percentencode, which leaves only letters,
  -- digits, - _ . ~ and %XX), decoded here: a quote or a backslash never appears inside a string literal, so no
  -- value can end one, whatever standard_conforming_strings says (with it off, :sqlstring's doubled quotes can
  -- be escaped by a backslash).
  EXECUTE format($fn$
    CREATE OR REPLACE FUNCTION %1$I.url_decoded(encoded text)
    RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp
    AS $body$
      SELECT coalesce(convert_from(string_agg(
        CASE WHEN m[1] IS NOT NULL THEN decode(substr(m[1], 2), 'hex') ELSE convert_to(m[2], 'UTF8') END,
        ''::bytea ORDER BY n), 'UTF8'), '')
      FROM regexp_matches(encoded, '(%%[0-9A-Fa-f]{2})|([^%%]+)', 'g') WITH ORDINALITY AS r(m, n)
    $body$
  $fn$, explorer);
  EXECUTE format('REVOKE ALL ON FUNCTION %I.url_decoded(text) FROM PUBLIC', explorer);
  EXECUTE format('CREATE OR REPLACE VIEW %1$I.ledger_runs AS SELECT * FROM %1$I.ledger_runs_of_owner()', explorer);
  EXECUTE format('REVOKE ALL ON %I.ledger_runs FROM PUBLIC', explorer);

  EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', explorer, reader);
  EXECUTE format('GRANT SELECT ON %I.ledger_runs TO %I', explorer, reader);
  -- A view runs its functions with the caller's EXECUTE right; the function itself reads as the owner.
  EXECUTE format('GRANT EXECUTE ON FUNCTION %I.ledger_runs_of_owner() TO %I', explorer, reader);
  EXECUTE format('GRANT EXECUTE ON FUNCTION %I.key_hash_of(text) TO %I', explorer, reader);
  EXECUTE format('GRANT EXECUTE ON FUNCTION %I.url_decoded(text) TO %I', explorer, reader);
END
$setup$;
