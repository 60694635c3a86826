#!/usr/bin/env bash
# docker-compose.yml runs this once, on the database's first start (the postgres image's
# /docker-entrypoint-initdb.d): the ledger explorer's read-only role and view, from postgres/explorer.sql.
set -euo pipefail
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" -q \
  -v ledger_schema=tool_ledger -v explorer_schema=tool_ledger_explorer \
  -v reader=tool_ledger_grafana -v reader_password="$GRAFANA_PG_PASSWORD" \
  -v key_hash_secret="${TOOL_LEDGER_KEY_HASH_SECRET:-}" \
  -f /tool-ledger/explorer.sql
