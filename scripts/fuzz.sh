#!/usr/bin/env bash
# Runs the fuzz targets that guard untrusted input for a bounded time each, on top of their
# checked-in seed corpora (testdata/fuzz). A failing input is written to the package's
# testdata/fuzz/<target>/ directory: check it in with the fix.
# Usage: scripts/fuzz.sh [seconds per target]   (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
targets=(
	"./policy/rules/ FuzzCommandDecision"
	"./policy/rules/ FuzzPlainProgram"
	"./policy/redact/ FuzzRedact"
	"./policy/redact/ FuzzText"
	"./internal/cleantext/ FuzzClean"
	"./mcp/ FuzzTraceMeta"
	"./jsonv/ FuzzParseFastMatchesChecked"
)
for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz: $name in $pkg for ${secs}s"
	# New inputs are minimized for at most 5s, so the time goes to fuzzing.
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "${secs}s" -fuzzminimizetime 5s "$pkg"
done
