#!/usr/bin/env bash
# Builds Citus from the vendored release tree (../shared/vendor/citus-<v>-src.tar.gz, beside the checkout) against
# Debian's PostgreSQL 15 into a cache folder outside the checkout, and reuses what is already there:
#   <cache>/citus-<v>-pg<server version>/install/usr/lib/postgresql/15/lib/citus*.so
#   <cache>/citus-<v>-pg<server version>/install/usr/share/postgresql/15/extension/citus*
# It is a `make install DESTDIR=...`: nothing is written under /usr. scripts/citus/cluster.mjs lays these files
# over a private copy of Debian's PostgreSQL tree in each cluster's own directory, so a test needs no root and
# leaves Debian's server untouched. Citus is a test dependency only: nothing of it is committed or shipped.
#
#   bash scripts/citus/build.sh             build when missing, print the install folder
#   TOOL_LEDGER_CITUS_CACHE=/some/dir ...   another cache folder (default ~/.cache/tool-ledger/citus)
#
# Needs postgresql-server-dev-15, libzstd-dev, liblz4-dev and libkrb5-dev (.ci/apt-packages.txt). Exits 3 with one
# line when the vendored tarball is absent (a plain clone has no ../shared). The build runs under `nice -n 19`.
# A cold build took 127 s on 2 cores (configure and make -j2, under nice); with the cache present this takes
# well under a second.
# Keyed by the server's full version too (pg_config), because a PostgreSQL minor release can change an API Citus
# uses (the vendored tree carries one such patch for 15.20). Runs may overlap: each takes the cache's lock first,
# builds in a temporary folder inside the cache and renames it into place when complete.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
CITUS_VERSION=13.2.2
PG_MAJOR=15
tarball="$repo/../shared/vendor/citus-$CITUS_VERSION-src.tar.gz"
if [ ! -f "$tarball" ]; then
  echo "citus build: skipped: $tarball is absent (the vendored Citus tree lives in ../shared beside the checkout)" >&2
  exit 3
fi
pg_config="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config"
if [ ! -x "$pg_config" ]; then
  echo "citus build: $pg_config is missing: apt-get install postgresql-server-dev-$PG_MAJOR libzstd-dev liblz4-dev libkrb5-dev" >&2
  exit 1
fi
server_version=$("$pg_config" --version | sed -n 's/^PostgreSQL \([0-9.]*\).*/\1/p')
cache=${TOOL_LEDGER_CITUS_CACHE:-$HOME/.cache/tool-ledger/citus}
out="$cache/citus-$CITUS_VERSION-pg$server_version"
mkdir -p "$cache"

exec 9>"$cache/.build.lock"
if ! flock -n 9; then
  echo "citus build: another build.sh is running on $cache; waiting for it to finish ..." >&2
  flock 9
fi

if [ -f "$out/.complete" ] && [ -f "$out/install/usr/lib/postgresql/$PG_MAJOR/lib/citus.so" ]; then
  echo "$out/install"
  exit 0
fi

tmp=$(mktemp -d "$cache/.tmp-citus-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
echo "citus build: building Citus $CITUS_VERSION against PostgreSQL $server_version (a cold build takes about 2 minutes on 2 cores) ..." >&2
tar xzf "$tarball" -C "$tmp"
(
  cd "$tmp/citus-$CITUS_VERSION"
  # configure and make print thousands of lines: kept in a log, shown only when a step fails.
  log="$tmp/build.log"
  run() { "$@" >>"$log" 2>&1 || { tail -n 60 "$log" >&2; echo "citus build: '$*' failed" >&2; exit 1; }; }
  run nice -n 19 ./configure --without-libcurl PG_CONFIG="$pg_config"
  run nice -n 19 make -j"$(nproc)"
  run make install DESTDIR="$tmp/install"
)
[ -f "$tmp/install/usr/lib/postgresql/$PG_MAJOR/lib/citus.so" ] || { echo "citus build: no citus.so was installed" >&2; exit 1; }
rm -rf "$tmp/citus-$CITUS_VERSION"
touch "$tmp/.complete"
[ -e "$out" ] && rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
echo "citus build: done in $((SECONDS - start))s" >&2
echo "$out/install"
