#!/usr/bin/env bash
# Starts a NocoDB for repeated test runs and leaves it running: prints the export that makes the NocoDB tests
# use it (NOCODB_TEST_STATE) instead of starting one per run. Stop it with: kill "$(jq .pid < STATE)".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
state="${1:-/tmp/lockstep-nocodb-dev.json}"
rm -f "$state"
nohup node "$here/server.js" --state "$state" >"$state.log" 2>&1 &
for _ in $(seq 1 600); do
  if [ -s "$state" ]; then
    if grep -q '"error"' "$state"; then cat "$state"; exit 1; fi
    echo "export NOCODB_TEST_STATE=$state"; exit 0
  fi
  sleep 0.5
done
echo "NocoDB did not start in 300 s (log: $state.log)"; exit 1
