#!/usr/bin/env bash
# Prints dsh's hot-path figures next to the floors measurable in the same run, and the
# machine and its load, so every ratio in docs/benchmarks.md can be re-measured with one
# command:
#   - the typed tool call (tool BenchmarkExecuteTyped*) against a plain encoding/json
#     decode + encode of the same arguments and output (tool BenchmarkEncodingJSONFloor);
#   - the agent scheduler (agent BenchmarkScheduler1000Naps) against a bare goroutine batch
#     doing the same waits (agent BenchmarkGoroutineFloor1000Naps);
#   - where node is installed, a bare worker_threads spawn (start a worker, get one message
#     back, let it exit), the floor of any worker-based Code Mode run;
#   - the goroutine containment every contained stage pays (internal/contain BenchmarkCall).
# Usage: scripts/bench-compare.sh [count]   (count: benchmark repetitions, default 3)
# Wall times on a shared machine are upper bounds; allocation counts are exact.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}

echo "== machine"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "nproc:   $(nproc)"
echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || echo unknown)"
echo "go:      $(go version)"
echo "load before: $(uptime)"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -run '^$' -benchmem -count "$count" \
	-bench '^(BenchmarkExecuteTyped|BenchmarkExecuteTypedOwned|BenchmarkExecuteTypedHooks|BenchmarkEncodingJSONFloor)$' ./tool/ >>"$out"
go test -run '^$' -benchmem -count "$count" \
	-bench '^(BenchmarkScheduler1000Naps|BenchmarkGoroutineFloor1000Naps)$' ./agent/ >>"$out"
go test -run '^$' -benchmem -count "$count" -bench '^BenchmarkCall$' ./internal/contain/ >>"$out"

if command -v node >/dev/null; then
	echo "node:    $(node --version)"
	# Each round spawns a worker that posts one message and exits; the best of $count
	# batches of 20 spawns is reported as ns per spawn.
	node -e '
const { Worker } = require("node:worker_threads");
const rounds = Number(process.argv[1]), n = 20;
function spawn() {
  return new Promise((resolve, reject) => {
    const w = new Worker("require(\"node:worker_threads\").parentPort.postMessage(1)", { eval: true });
    w.once("message", () => {});
    w.once("error", reject);
    w.once("exit", resolve);
  });
}
(async () => {
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await spawn();
    const ns = Number(process.hrtime.bigint() - t0) / n;
    console.log(`BenchmarkNodeWorkerSpawn \t${n}\t${ns.toFixed(0)} ns/op`);
  }
})().catch((e) => { console.error(e); process.exit(1); });
' "$count" >>"$out"
else
	echo "node:    not installed (no worker_threads floor)"
fi
echo "load after:  $(uptime)"

echo
echo "== best of $count (ns/op, allocs/op)"
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	ns = ""; al = ""
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "ns/op") ns = $i
		if ($(i+1) == "allocs/op") al = $i
	}
	if (ns == "") next
	if (!(name in best) || ns + 0 < best[name] + 0) { best[name] = ns; allocs[name] = al }
	if (!(name in seen)) { order[++n] = name; seen[name] = 1 }
}
function ratio(a, b) { return (a in best && b in best && best[b] > 0) ? sprintf("%.2f×", best[a] / best[b]) : "-" }
END {
	printf "%-34s %14s %10s\n", "benchmark", "ns/op", "allocs/op"
	for (i = 1; i <= n; i++) printf "%-34s %14.0f %10s\n", order[i], best[order[i]], allocs[order[i]] == "" ? "-" : allocs[order[i]]
	print ""
	print "== ratios to the floors"
	printf "%-58s %s\n", "typed call / encoding/json floor", ratio("BenchmarkExecuteTyped", "BenchmarkEncodingJSONFloor")
	printf "%-58s %s\n", "typed call, owned args / encoding/json floor", ratio("BenchmarkExecuteTypedOwned", "BenchmarkEncodingJSONFloor")
	printf "%-58s %s\n", "typed call with hooks / encoding/json floor", ratio("BenchmarkExecuteTypedHooks", "BenchmarkEncodingJSONFloor")
	printf "%-58s %s\n", "scheduler, 1000 naps / bare goroutine batch", ratio("BenchmarkScheduler1000Naps", "BenchmarkGoroutineFloor1000Naps")
}' "$out"
