#!/usr/bin/env bash
# Builds the operations stack's Go programs from their Go modules (through the Go module proxy) into a cache
# folder outside the checkout, and reuses what is already there:
#   jaeger-<v>/jaeger            Jaeger v2 (docker-compose.yml: jaegertracing/jaeger)
#   otelcol-<v>/otelcol-tool-ledger  the collector from collector/builder-config.yaml (otel/opentelemetry-collector-contrib)
#   victoria-logs-<v>/victoria-logs  the log store (victoriametrics/victoria-logs)
# Prometheus is Debian's package (.ci/apt-packages.txt), not built here.
#
#   bash scripts/stack/build.sh            build what is missing, print the cache folder
#   TOOL_LEDGER_STACK_CACHE=/some/dir ...  another cache folder
#
# Builds run under `nice -n 19`: the machines are small and shared. Nothing fetched lands in the checkout.
# A cold build (empty Go module and build caches) takes about 16 minutes on 2 cores, most of it Jaeger and the
# collector; with the cache present it takes well under a second.
#
# Runs may overlap (two shells, two test runs): each takes the cache's lock (flock) first, so the second waits
# for the first and then finds the programs built. Each program is built in a temporary folder inside the cache
# and renamed into place when complete, so a reader never sees a half-written program folder.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/scripts/stack/versions.sh"
cache=$(stack_cache)
mkdir -p "$cache"

exec 9>"$cache/.build.lock"
if ! flock -n 9; then
  echo "stack build: another build.sh is running on $cache; waiting for it to finish ..." >&2
  flock 9
fi

build_flags=(-trimpath "-ldflags=-s -w")

# Each program is done when its folder holds the binary and a .complete marker written after the build.
done_already() { [ -x "$1/$2" ] && [ -f "$1/.complete" ]; }

# Prints what is being built and, when done, how long it took. $1 step ("1/3"), $2 name, $3 its cold time.
timed() {
  local step=$1 name=$2 cold=$3; shift 3
  local start=$SECONDS
  echo "stack build: [$step] $name: checking (a cold build of it takes about $cold on 2 cores) ..." >&2
  "$@"
  echo "stack build: [$step] $name: done in $((SECONDS - start))s" >&2
}

# A temporary folder in the cache (same file system, so the final rename is atomic), removed on any exit.
temps=()
cleanup() { if [ ${#temps[@]} -gt 0 ]; then rm -rf "${temps[@]}"; fi; }
trap cleanup EXIT
new_temp() {
  local dir
  dir=$(mktemp -d "$cache/.tmp-$1-XXXXXX")
  temps+=("$dir")
  echo "$dir"
}

# Renames the finished folder $1 to $2, replacing what was there (under the lock, so no build races it).
into_place() {
  local tmp=$1 out=$2
  touch "$tmp/.complete"
  if [ -e "$out" ]; then
    local old
    old=$(new_temp old)
    rmdir "$old"
    mv "$out" "$old"
  fi
  mv "$tmp" "$out"
}

# Builds package $3 of module $1 at version $2 as the main module, so that its go.mod (replace directives
# included, which `go install pkg@version` refuses) and go.sum apply, into $4.
build_module() {
  local module=$1 version=$2 package=$3 binary=$4
  local dir
  dir=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || { echo "stack build: go mod download $module@$version gave no folder" >&2; return 1; }
  local src
  src=$(new_temp src)
  cp -r "$dir/." "$src"
  chmod -R u+w "$src"
  (cd "$src" && nice -n 19 go build "${build_flags[@]}" -o "$binary" "$package")
  rm -rf "$src"
}

build_jaeger() {
  local out="$cache/jaeger-$JAEGER_VERSION"
  done_already "$out" jaeger && return 0
  echo "stack build:   building Jaeger $JAEGER_VERSION (module $JAEGER_MODULE_VERSION) ..." >&2
  local tmp
  tmp=$(new_temp jaeger)
  # Jaeger v2.x.0 is tagged v1.(x+63).0 in its Go module, which has no /v2 path.
  build_module github.com/jaegertracing/jaeger "$JAEGER_MODULE_VERSION" ./cmd/jaeger "$tmp/jaeger"
  into_place "$tmp" "$out"
}

build_otelcol() {
  local out="$cache/otelcol-$OTELCOL_VERSION"
  # Built from this very manifest, or built again: a component added to the config needs a new binary.
  if done_already "$out" otelcol-tool-ledger && cmp -s "$out/builder-config.yaml" "$repo/collector/builder-config.yaml"; then
    return 0
  fi
  local tools="$cache/builder-$OTELCOL_VERSION"
  if [ ! -x "$tools/builder" ]; then
    echo "stack build:   installing the collector builder $OTELCOL_VERSION ..." >&2
    local tools_tmp
    tools_tmp=$(new_temp builder)
    GOBIN="$tools_tmp" nice -n 19 go install "${build_flags[@]}" \
      "go.opentelemetry.io/collector/cmd/builder@v$OTELCOL_VERSION"
    into_place "$tools_tmp" "$tools"
  fi
  echo "stack build:   building the collector $OTELCOL_VERSION from collector/builder-config.yaml ..." >&2
  local tmp
  tmp=$(new_temp otelcol)
  # The builder writes its generated sources here, inside the temporary folder: never into a shared path.
  local src="$tmp/src"
  mkdir -p "$src"
  # The builder's own release build already uses -trimpath and -ldflags="-s -w".
  nice -n 19 "$tools/builder" --config="$repo/collector/builder-config.yaml" --output-path="$src"
  mv "$src/otelcol-tool-ledger" "$tmp/otelcol-tool-ledger"
  cp "$repo/collector/builder-config.yaml" "$tmp/builder-config.yaml"
  rm -rf "$src"
  into_place "$tmp" "$out"
}

build_victoria_logs() {
  local out="$cache/victoria-logs-$VICTORIA_LOGS_VERSION"
  done_already "$out" victoria-logs && return 0
  echo "stack build:   building VictoriaLogs $VICTORIA_LOGS_VERSION ..." >&2
  local tmp
  tmp=$(new_temp victoria-logs)
  build_module github.com/VictoriaMetrics/VictoriaLogs "v$VICTORIA_LOGS_VERSION" ./app/victoria-logs \
    "$tmp/victoria-logs"
  into_place "$tmp" "$out"
}

timed 1/3 jaeger "15 minutes" build_jaeger
timed 2/3 otelcol "14 minutes" build_otelcol
timed 3/3 victoria-logs "4 minutes" build_victoria_logs
echo "$cache"
