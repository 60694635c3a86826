# The stack's program versions, kept equal to the images docker-compose.yml pins (test/ops/stack-config.test.ts
# checks the two agree). Sourced by build.sh; test/ops/support/stack.ts reads the same names.
# The collector is 0.165.0 rather than an older release: the module proxy does not serve redactionprocessor v0.120.0.
JAEGER_VERSION=2.5.0          # jaegertracing/jaeger:2.5.0
JAEGER_MODULE_VERSION=v1.68.0 # the Go module's tag for Jaeger v2.5.0
OTELCOL_VERSION=0.165.0       # otel/opentelemetry-collector-contrib:0.165.0
VICTORIA_LOGS_VERSION=1.52.1  # victoriametrics/victoria-logs:v1.52.1

stack_cache() { echo "${TOOL_LEDGER_STACK_CACHE:-$HOME/.cache/tool-ledger/stack}"; }
