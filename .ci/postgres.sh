#!/usr/bin/env bash
# Starts Debian's PostgreSQL on 127.0.0.1:5432 for the test suite, with trust auth for loopback and a `test`
# database. The machine no longer starts one before CI, and a fresh machine may have no cluster yet.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql postgresql-contrib >/dev/null
fi
version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
if [ ! -d "/etc/postgresql/$version/main" ]; then
  pg_createcluster "$version" main >/dev/null
fi
hba="/etc/postgresql/$version/main/pg_hba.conf"
marker='# tool-ledger CI: trust loopback'
if ! grep -qF "$marker" "$hba"; then
  { echo "$marker"; echo 'host all all 127.0.0.1/32 trust'; echo 'host all all ::1/128 trust'; cat "$hba"; } >"$hba.new"
  mv "$hba.new" "$hba"
  chown postgres:postgres "$hba"
fi
if pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$version" main reload
else
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
fi
for _ in $(seq 1 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 \
  || psql -h 127.0.0.1 -U postgres -qc 'CREATE DATABASE test'
