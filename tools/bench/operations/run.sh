#!/usr/bin/env bash
# Operations-list benchmark: builds the code (`npm run -s build`, so the API measured is the current source) and
# the benchmark itself with the repository's swc config into dist/, then runs it. Arguments go to the benchmark
# (--rows N, --requests N, --help; see README.md). Skip the build of apps/libs with BENCH_NO_BUILD=1
# (dist/apps/api/src/app.factory.js must exist).
set -euo pipefail
cd "$(dirname "$0")/../../.."
if [ -z "${BENCH_NO_BUILD:-}" ] || [ ! -f dist/apps/api/src/app.factory.js ]; then
  npm run -s build
fi
npx swc tools/bench/operations tools/bench/engine tools/bench/common -d dist --config-file .swcrc --quiet
# shellcheck disable=SC2086
exec node ${BENCH_NODE_OPTIONS:-} dist/tools/bench/operations/run.js "$@"
