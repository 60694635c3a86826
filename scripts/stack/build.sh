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
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
source "$repo/scripts/stack/versions.sh"
cache=$(stack_cache)
mkdir -p "$cache"

build_flags=(-trimpath "-ldflags=-s -w")

# Each program is done when its folder holds the binary and a .complete marker written after the build.
done_already() { [ -x "$1/$2" ] && [ -f "$1/.complete" ]; }

timed() {
  local name=$1; shift
  local start=$SECONDS
  echo "stack build: $name ..." >&2
  "$@"
  echo "stack build: $name took $((SECONDS - start))s" >&2
}

# Builds package $3 of module $1 at version $2 as the main module, so that its go.mod (replace directives
# included, which `go install pkg@version` refuses) and go.sum apply, into $4.
build_module() {
  local module=$1 version=$2 package=$3 binary=$4
  local dir
  dir=$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || { echo "stack build: go mod download $module@$version gave no folder" >&2; return 1; }
  local src
  src=$(mktemp -d "$cache/.src-XXXXXX")
  cp -r "$dir/." "$src"
  chmod -R u+w "$src"
  (cd "$src" && nice -n 19 go build "${build_flags[@]}" -o "$binary" "$package")
  rm -rf "$src"
}

build_jaeger() {
  local out="$cache/jaeger-$JAEGER_VERSION"
  done_already "$out" jaeger && return 0
  mkdir -p "$out"
  # Jaeger v2.x.0 is tagged v1.(x+63).0 in its Go module, which has no /v2 path.
  build_module github.com/jaegertracing/jaeger "$JAEGER_MODULE_VERSION" ./cmd/jaeger "$out/jaeger"
  touch "$out/.complete"
}

build_otelcol() {
  local out="$cache/otelcol-$OTELCOL_VERSION"
  # Built from this very manifest, or built again: a component added to the config needs a new binary.
  if done_already "$out" otelcol-tool-ledger && cmp -s "$out/builder-config.yaml" "$repo/collector/builder-config.yaml"; then
    return 0
  fi
  rm -f "$out/.complete"
  local tools="$cache/builder-$OTELCOL_VERSION"
  if [ ! -x "$tools/builder" ]; then
    mkdir -p "$tools"
    GOBIN="$tools" nice -n 19 go install "${build_flags[@]}" \
      "go.opentelemetry.io/collector/cmd/builder@v$OTELCOL_VERSION"
  fi
  local src="$out/src"
  rm -rf "$src"
  mkdir -p "$src"
  # The builder's own release build already uses -trimpath and -ldflags="-s -w".
  nice -n 19 "$tools/builder" --config="$repo/collector/builder-config.yaml" --output-path="$src"
  mv "$src/otelcol-tool-ledger" "$out/otelcol-tool-ledger"
  cp "$repo/collector/builder-config.yaml" "$out/builder-config.yaml"
  rm -rf "$src"
  touch "$out/.complete"
}

build_victoria_logs() {
  local out="$cache/victoria-logs-$VICTORIA_LOGS_VERSION"
  done_already "$out" victoria-logs && return 0
  mkdir -p "$out"
  build_module github.com/VictoriaMetrics/VictoriaLogs "v$VICTORIA_LOGS_VERSION" ./app/victoria-logs \
    "$out/victoria-logs"
  touch "$out/.complete"
}

timed jaeger build_jaeger
timed otelcol build_otelcol
timed victoria-logs build_victoria_logs
echo "$cache"
