#!/usr/bin/env bash
# Fuzzes the targets that guard untrusted input, on top of their checked-in seed corpora
# (testdata/fuzz). A failing input is written to the package's testdata/fuzz/<target>/
# directory: check it in with the fix.
#
# Usage: scripts/fuzz.sh [seconds per target]   (default 20)
#
# Each target runs a fixed number of executions: its rate on a quiet machine of the kind CI
# uses (2 cores, measured 2026-12-02) times the seconds asked for. On a busy machine the same work takes longer
# instead of shrinking. A count rather than a duration (-fuzztime Nx, not Ns) because Go's
# fuzzing coordinator up to Go 1.26 can fail a run that ends on its -fuzztime deadline with
# a bare "context deadline exceeded" and no failing input (go.dev/issue/75804, fixed in Go
# 1.27); a count never reaches that deadline.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
case "$secs" in
'' | *[!0-9]*)
	echo "fuzz.sh: the seconds per target must be a whole number, got \"$secs\"" >&2
	exit 2
	;;
esac
# package, target, executions a second on a quiet 2-core machine (the last "execs" figure of
# `go test -run '^$' -fuzz '^Target$' -fuzztime 10s ./pkg/`, divided by 10, rounded down).
# What each guards:
targets=(
	"./policy/rules/ FuzzCommandDecision 3500"                # permission rules against any command line
	"./policy/rules/ FuzzPlainProgram 9400"                   # the command matcher's program scanner
	"./policy/redact/ FuzzRedact 6800"                        # secret redaction of any text
	"./policy/redact/ FuzzText 4100"                          # the redaction policy's text path
	"./internal/cleantext/ FuzzClean 15000"                   # terminal-safe text
	"./mcp/ FuzzTraceMeta 7900"                               # trace metadata from an MCP peer
	"./mcp/ FuzzReadFrame 3300"                               # an MCP server's stdio frames
	"./mcp/ FuzzProjectContent 6600"                          # an MCP server's content, images included
	"./jsonv/ FuzzParseFastMatchesChecked 13000"              # every JSON text dsh parses
	"./llm/openai/ FuzzSSEReader 7100"                        # a model endpoint's event stream
	"./llm/openai/ FuzzStream 7000"                           # a model endpoint's streamed reply
	"./agent/ FuzzModelToolCalls 1800"                        # a model's tool calls, through a whole turn
	"./session/ FuzzReadLog 20000"                            # a session log read from disk
	"./coderuntime/quickjs/ FuzzDecodeWorkerFrame 6500"       # a Code Mode worker's frames
	"./coderuntime/quickjs/ FuzzScanCall 9900"                # the host's fast path over worker lines
)
for t in "${targets[@]}"; do
	read -r pkg name rate _ <<<"$t"
	execs=$((rate * secs))
	if [ "$execs" -lt 1 ]; then
		execs=1
	fi
	echo "fuzz: $name in $pkg, $execs executions (≈ ${secs}s on a quiet 2-core machine)"
	# New inputs are minimized for at most 5s, so the time goes to fuzzing.
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "${execs}x" -fuzzminimizetime 5s "$pkg"
done
