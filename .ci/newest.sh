#!/usr/bin/env bash
# The newest-majors lane's install: a copy of this checkout whose devDependencies are the newest releases of every
# SDK tool-ledger integrates with (OpenTelemetry JS 3.x with sdk-trace instead of sdk-trace-base, ai 7,
# @openai/agents 0.20, ...). The checkout's own package.json keeps the previous majors, because those are the ones
# that still run on Node 20, the machine's Node and the bottom of the support matrix; this copy is what a project
# started today installs.
#
#   bash .ci/newest.sh NODE_BIN_DIR TARGET_DIR
#
# NODE_BIN_DIR holds the `node` to install and test with (npm itself is the machine's, run by that node).
# TARGET_DIR is made (or emptied) and left with the copy and its node_modules. dist/ is copied from this checkout,
# which must be built first: the package is published built against the previous majors' types, and this lane
# runs that build, as a user of the newest majors gets it.
set -euo pipefail
node_bin=$1
target=$2
cd "$(dirname "$0")/.."
export PATH="$node_bin:$PATH"

# Tracked and new files, not node_modules or build output: the copy installs its own.
rm -rf "$target"
mkdir -p "$target"
test -f dist/index.js || { echo "newest.sh: build this checkout first (npm run build)" >&2; exit 1; }
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$target" --
cp -r dist "$target/dist"
cd "$target"

# `latest` on purpose: this lane is the new user's `npm install` with no versions, so a new major that breaks an
# adapter shows up here first. The versions it resolved are printed below for the log.
newest=(
  @opentelemetry/api@latest
  @opentelemetry/context-async-hooks@latest
  @opentelemetry/core@latest
  @opentelemetry/exporter-logs-otlp-grpc@latest
  @opentelemetry/exporter-logs-otlp-http@latest
  @opentelemetry/exporter-logs-otlp-proto@latest
  @opentelemetry/exporter-metrics-otlp-grpc@latest
  @opentelemetry/exporter-metrics-otlp-http@latest
  @opentelemetry/exporter-metrics-otlp-proto@latest
  @opentelemetry/exporter-prometheus@latest
  @opentelemetry/exporter-trace-otlp-grpc@latest
  @opentelemetry/exporter-trace-otlp-http@latest
  @opentelemetry/exporter-trace-otlp-proto@latest
  @opentelemetry/instrumentation@latest
  @opentelemetry/instrumentation-pg@latest
  @opentelemetry/resources@latest
  @opentelemetry/sdk-logs@latest
  @opentelemetry/sdk-metrics@latest
  @opentelemetry/sdk-node@latest
  @opentelemetry/sdk-trace@latest
  @opentelemetry/semantic-conventions@latest
  @anthropic-ai/sdk@latest
  @langchain/core@latest
  @modelcontextprotocol/client@latest
  @modelcontextprotocol/node@latest
  @modelcontextprotocol/sdk@latest
  @modelcontextprotocol/server@latest
  @openai/agents@latest
  @types/node@24
  ai@latest
)
# The 3.x line has no sdk-trace-base (sdk-trace replaces it) and no api-logs (the logs API is in @opentelemetry/api
# 1.10): uninstalled so nothing can lean on them without the lane noticing.
npm uninstall --no-audit --no-fund @opentelemetry/sdk-trace-base @opentelemetry/api-logs >/dev/null
npm install --no-audit --no-fund --save-dev "${newest[@]}"
npm ls --depth=0 2>/dev/null | grep -E '@opentelemetry/(api|sdk-node|sdk-trace|sdk-logs|sdk-metrics)@|[ /]ai@|@openai/agents@|@anthropic-ai/sdk@|@langchain/core@|@modelcontextprotocol/' || true
