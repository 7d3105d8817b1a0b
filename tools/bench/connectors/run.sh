#!/usr/bin/env bash
# Connector benchmark: builds the benchmark and the libraries it imports with the repository's swc config
# into dist/bench (apart from `npm run build`'s dist/), then runs it. Arguments go to the benchmark
# (--rows N, --page-size N, --batch-size N, --repeat N, --only postgres,mysql, --change-capture, --help).
# Extra node flags: BENCH_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=tmp/bench-prof" tools/bench/connectors/run.sh ...
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=dist/bench
rm -rf "$out"
npx swc tools/bench libs -d "$out" --config-file .swcrc --quiet --copy-files \
  --ignore '**/*.spec.ts,**/*.e2e-spec.ts,**/test/**,**/testing/**'
# shellcheck disable=SC2086
exec node ${BENCH_NODE_OPTIONS:-} "$out/tools/bench/connectors/run.js" "$@"
