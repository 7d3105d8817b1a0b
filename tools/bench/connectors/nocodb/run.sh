#!/usr/bin/env bash
# NocoDB connector benchmark against the real NocoDB (see run.ts): builds the benchmark and the libraries it
# imports into dist/bench-nocodb, then runs it. Needs tools/test/nocodb/install.sh run once; starts a NocoDB of
# its own unless NOCODB_TEST_STATE names a running one. Arguments: --rows N (default 20000), --rate R
# (requests/s, default 20), --edits N (change latency samples, default 40).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
out=dist/bench-nocodb
rm -rf "$out"
npx swc tools/bench/connectors/nocodb libs -d "$out" --config-file .swcrc --quiet --copy-files \
  --ignore '**/*.spec.ts,**/*.e2e-spec.ts,**/test/**'
exec node "$out/tools/bench/connectors/nocodb/run.js" "$@"
