#!/usr/bin/env bash
# The example's dynamic page (examples/next, /dynamic SSR) through nextAdapter in one
# Fastify process and under spindle start with 2 workers, against `next start`, in one run.
# Reuses the shared harness (bench/run.mjs): autocannon on 127.0.0.1, 100 connections,
# 10 s per configuration after a 2 s warm-up, configurations alternated round by round.
# Holds the bench lock so no other measurement overlaps this one.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export PATH="$root/.toolchain/node_modules/.bin:$PATH"
export NEXT_TELEMETRY_DISABLED=1
cd "$root"
pnpm --filter @spindle/example-next run --silent build:if-needed
exec flock /tmp/spindle-bench.lock node bench/run.mjs --workloads next \
  --configs single,adapter,spindle --workers 2 --rounds "${ROUNDS:-2}" --duration "${DURATION:-10}" --no-open "$@"
