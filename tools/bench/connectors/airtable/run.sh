#!/usr/bin/env bash
# Airtable connector benchmark against the simulator (see run.ts): builds the benchmark and the libraries it
# imports (the simulator included) into dist/bench-airtable, then runs it. Arguments: --rows N (default 5000).
set -euo pipefail
cd "$(dirname "$0")/../../../.."
out=dist/bench-airtable
rm -rf "$out"
npx swc tools/bench/connectors/airtable libs -d "$out" --config-file .swcrc --quiet --copy-files \
  --ignore '**/*.spec.ts,**/*.e2e-spec.ts,**/test/**'
exec node "$out/tools/bench/connectors/airtable/run.js" "$@"
