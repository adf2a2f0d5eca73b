#!/usr/bin/env bash
# Runs the benchmarks that docs/benchmarks.md reports, with allocation counts.
# Usage: scripts/bench.sh [package pattern...]   (default: every package)
set -euo pipefail
cd "$(dirname "$0")/.."
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
go test -run '^$' -bench . -benchmem -count 1 "${pkgs[@]}"
