#!/usr/bin/env bash
# API load benchmark: builds the code (`npm run -s build`, so the API measured is the current source) and the
# benchmark itself with the repository's swc config into dist/, then runs it. Arguments go to the benchmark
# (--duration S, --connections N, --only CASES, --help; see README.md). Skip the build of apps/libs with
# BENCH_NO_BUILD=1 (dist/apps/api/src/main.js must exist).
set -euo pipefail
cd "$(dirname "$0")/../../.."
if [ -z "${BENCH_NO_BUILD:-}" ] || [ ! -f dist/apps/api/src/main.js ]; then
  npm run -s build
fi
npx swc tools/bench/api tools/bench/engine tools/bench/common -d dist --config-file .swcrc --quiet
# shellcheck disable=SC2086
exec node ${BENCH_NODE_OPTIONS:-} dist/tools/bench/api/run.js "$@"
