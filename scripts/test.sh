#!/usr/bin/env bash
# The test command: installs what the tests need (scripts/test-deps.sh), runs every test
# with the race detector, then runs the fuzz targets that guard untrusted input for a
# bounded time on top of their checked-in corpora (scripts/fuzz.sh). CI (.ci/run) runs
# exactly this script.
# Usage: scripts/test.sh [seconds per fuzz target]   (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/test-deps.sh
go test -race -timeout 30m ./...
scripts/fuzz.sh "${1:-10}"
