#!/usr/bin/env bash
# Change latency NocoDB -> PostgreSQL through the whole service (goal p95 < 2 s): NocoDB's webhook calls the
# API's notification endpoint, the real worker reads the change from NocoDB and writes it to PostgreSQL. It
# runs the end-to-end test that does exactly that (apps/api/test/nocodb-sync.e2e-spec.ts: API in-process on
# loopback as PUBLIC_URL, worker from dist/, the run's NocoDB) with N edits (default 40) instead of CI's 20,
# and prints p50, p95 and max. Each edit is timed from NocoDB's answer until PostgreSQL has it.
#   tools/bench/connectors/nocodb/engine.sh [N]
set -euo pipefail
cd "$(dirname "$0")/../../../.."
npm run -s build >/dev/null
NOCODB_LATENCY_EDITS="${1:-40}" CI=true npx jest apps/api/test/nocodb-sync.e2e-spec.ts --selectProjects api \
  -t 'through the webhook' 2>&1 | grep -E 'NocoDB -> PostgreSQL through the webhook and the worker|Tests:|✕|●' 
