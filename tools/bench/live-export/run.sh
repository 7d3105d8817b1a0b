#!/usr/bin/env bash
# Live export benchmark: builds the code (`npm run -s build`, so the worker measured is the current source) and
# the benchmark with the repository's swc config into dist/, then runs it against the real worker process.
# Arguments go to the benchmark (--rows N, --repeat N, --only pg-to-mysql,mysql-to-pg, --help; see README.md).
# Skip the build of apps/libs with BENCH_NO_BUILD=1 (dist/apps/worker/src/main.js must exist).
set -euo pipefail
cd "$(dirname "$0")/../../.."
if [ -z "${BENCH_NO_BUILD:-}" ] || [ ! -f dist/apps/worker/src/main.js ]; then
  npm run -s build
fi
npx swc tools/bench/live-export tools/bench/engine tools/bench/common -d dist --config-file .swcrc --quiet
# shellcheck disable=SC2086
exec node ${BENCH_NODE_OPTIONS:-} dist/tools/bench/live-export/run.js "$@"
