#!/usr/bin/env bash
# Installs the real NocoDB the NocoDB connector's tests run against (tools/test/nocodb/package.json pins it),
# as measured on these machines: `npm install --ignore-scripts` (a dependency's preinstall insists on pnpm,
# and the overrides keep `xlsx` off a CDN these machines cannot reach), then sqlite3 built from source
# (about 2 minutes; NocoDB loads it even when its metadata lives in PostgreSQL). About 1,430 packages.
# Does nothing when it is installed already (delete node_modules here to install again).
set -euo pipefail
cd "$(dirname "$0")"
if [ -f node_modules/nocodb/package.json ] && [ -f node_modules/.lockstep-installed ]; then
  echo "nocodb: installed ($(node -p "require('./node_modules/nocodb/package.json').version"))"
  exit 0
fi
npm install --ignore-scripts --no-audit --no-fund --loglevel=error
npm rebuild sqlite3 --build-from-source --loglevel=error
touch node_modules/.lockstep-installed
echo "nocodb: installed ($(node -p "require('./node_modules/nocodb/package.json').version"))"
