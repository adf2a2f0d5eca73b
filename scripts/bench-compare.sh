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
#   - the goroutine containment every contained stage pays (internal/contain BenchmarkCall,
#     and BenchmarkRunner, the reusable form the pipeline uses);
#   - the comparison scenarios (a)-(e) of docs/benchmarks.md on the registry dsh builds
#     (cmd/dsh BenchmarkScenarios; (d) is session BenchmarkDeriveMessages at 10k / 100k /
#     1M events, each size with comparable total work, over the live log and over the log as
#     a store loads it, and once a call with the caches emptied before it, as an agent's
#     step calls it; then the same events without the messages a log keeps (every message
#     derived from its payload, as for a hand-built slice) next to that path's walk and
#     write floors), next to those floors.
# Usage: scripts/bench-compare.sh [count]   (count: benchmark repetitions, default 3)
# DSH_BENCH_NO_1M=1 leaves out DeriveMessages at 1M events (the slowest part: ~1 min a count).
# Wall times on a shared machine are upper bounds; allocation counts are exact; cpu-ns/op
# is the process's CPU time per operation, which moves less with other work on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-3}

echo "== machine"
echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "nproc:   $(nproc)"
echo "cpu:     $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || echo unknown)"
echo "go:      $(go version)"
echo "load before: $(uptime)"
echo "loadavg:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

out=$(mktemp)
bin=$(mktemp -d)
trap 'rm -rf "$out" "$bin"' EXIT
# The Code Mode scenarios' worker is the dsh binary a user runs, built once for every run
# below (without DSH_BENCH_WORKER each benchmark process would build its own).
go build -o "$bin/dsh" ./cmd/dsh
export DSH_BENCH_WORKER="$bin/dsh"
go test -run '^$' -benchmem -count "$count" \
	-bench '^(BenchmarkExecuteTyped|BenchmarkExecuteTypedOwned|BenchmarkExecuteTypedHooks|BenchmarkEncodingJSONFloor)$' ./tool/ >>"$out"
go test -run '^$' -benchmem -count "$count" \
	-bench '^(BenchmarkScheduler1000Naps|BenchmarkGoroutineFloor1000Naps)$' ./agent/ >>"$out"
go test -run '^$' -benchmem -count "$count" -bench '^(BenchmarkCall|BenchmarkRunner)$' ./internal/contain/ >>"$out"
# The scenarios: (a) and (b) use a Code Mode worker per run, so a few runs each suffice.
go test -run '^$' -benchmem -count "$count" -bench '^BenchmarkScenarios$/^(c-typed-call)$' ./cmd/dsh/ >>"$out"
# (a) takes a worker started ahead that has prepared; back-to-back also waits for its start.
go test -run '^$' -benchmem -count "$count" -benchtime 20x -bench '^BenchmarkScenarios$/^(a-trivial-run_code|a-trivial-run_code-back-to-back)$' ./cmd/dsh/ >>"$out"
go test -run '^$' -benchmem -count "$count" -benchtime 3x \
	-bench '^BenchmarkScenarios$/^(b-run_code-1000-sequential-echo|e-scheduler-1000-naps)$' ./cmd/dsh/ >>"$out"
# (d): each size on its own, with comparable total work (3M events a benchmark at 10k and
# 100k; 10 calls at 1M, so that collections come in as they do in a long run: one every
# five calls or so): the derivation over the live log, over the log as a store's load
# returns it and with cold caches; the payload path (no kept messages), its floors, and
# that path without the collections it triggers.
sizes="10k:300x 100k:30x 1000k:10x"
if [ "${DSH_BENCH_NO_1M:-}" = 1 ]; then
	sizes="10k:300x 100k:30x"
fi
for sb in $sizes; do
	go test -run '^$' -benchmem -count "$count" -benchtime "${sb#*:}" \
		-bench "^BenchmarkDeriveMessages\$/^(derive|derive-loaded|derive-cold|derive-step|scan|scan-cold|payloads|walk|walk-loaded|payloads-nogc|write|payloads-cold|walk-cold)\$/^${sb%%:*}\$" ./session/ >>"$out"
done

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
echo "loadavg:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"

echo
echo "== best of $count (ns/op, cpu-ns/op where measured, allocs/op)"
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	ns = ""; al = ""; cpu = ""
	for (i = 2; i < NF; i++) {
		if ($(i+1) == "ns/op") ns = $i
		if ($(i+1) == "cpu-ns/op") cpu = $i
		if ($(i+1) == "cpu-ns/event") cpu = $i "/ev"
		if ($(i+1) == "allocs/op") al = $i
	}
	if (ns == "") next
	if (!(name in best) || ns + 0 < best[name] + 0) { best[name] = ns; allocs[name] = al }
	if (cpu != "" && (!(name in bestcpu) || cpu + 0 < bestcpu[name] + 0)) bestcpu[name] = cpu
	# cpu-ns/event (DeriveMessages) is printed with an "/ev" suffix and never used in a ratio
	if (!(name in seen)) { order[++n] = name; seen[name] = 1 }
}
function ratio(a, b) { return (a in best && b in best && best[b] > 0) ? sprintf("%.2f×", best[a] / best[b]) : "-" }
function evratio(a, b) { return (a in bestcpu && b in bestcpu && bestcpu[b] + 0 > 0) ? sprintf("%.2f×", 10 * bestcpu[a] / bestcpu[b]) : "-" }
function cpuratio(a, b) { return (a in bestcpu && b in bestcpu && bestcpu[b] + 0 > 0) ? sprintf("%.2f×", bestcpu[a] / bestcpu[b]) : "-" }
END {
	printf "%-62s %14s %12s %10s\n", "benchmark", "ns/op", "cpu-ns/op", "allocs/op"
	for (i = 1; i <= n; i++) {
		o = order[i]
		c = "-"
		if (o in bestcpu) c = (bestcpu[o] ~ /\/ev$/) ? sprintf("%.0f/ev", bestcpu[o] + 0) : sprintf("%.0f", bestcpu[o])
		printf "%-62s %14.0f %12s %10s\n", o, best[o], c, allocs[o] == "" ? "-" : allocs[o]
	}
	print ""
	print "== ratios to the floors (wall; CPU where both sides report it)"
	printf "%-62s %8s %8s\n", "typed call / encoding/json floor", ratio("BenchmarkExecuteTyped", "BenchmarkEncodingJSONFloor"), cpuratio("BenchmarkExecuteTyped", "BenchmarkEncodingJSONFloor")
	printf "%-62s %8s %8s\n", "typed call, owned args / encoding/json floor", ratio("BenchmarkExecuteTypedOwned", "BenchmarkEncodingJSONFloor"), cpuratio("BenchmarkExecuteTypedOwned", "BenchmarkEncodingJSONFloor")
	printf "%-62s %8s %8s\n", "typed call with hooks / encoding/json floor", ratio("BenchmarkExecuteTypedHooks", "BenchmarkEncodingJSONFloor"), cpuratio("BenchmarkExecuteTypedHooks", "BenchmarkEncodingJSONFloor")
	printf "%-62s %8s %8s\n", "(c) typed call, dsh wiring / encoding/json floor", ratio("BenchmarkScenarios/c-typed-call", "BenchmarkEncodingJSONFloor"), cpuratio("BenchmarkScenarios/c-typed-call", "BenchmarkEncodingJSONFloor")
	printf "%-62s %8s\n", "(a) trivial run_code / bare node worker spawn", ratio("BenchmarkScenarios/a-trivial-run_code", "BenchmarkNodeWorkerSpawn")
	printf "%-62s %8s\n", "scheduler, 1000 naps / bare goroutine batch", ratio("BenchmarkScheduler1000Naps", "BenchmarkGoroutineFloor1000Naps")
	printf "%-62s %8s\n", "(e) 1000 naps, dsh wiring / bare goroutine batch", ratio("BenchmarkScenarios/e-scheduler-1000-naps", "BenchmarkGoroutineFloor1000Naps")
	# (d): wall and CPU ratios of the whole call (CPU: per-event CPU ratio times 10).
	# derive, derive-loaded and derive-cold are what the agent loop and a resumed session
	# pay (the messages the log keeps, in a history placed by earlier calls); the cold ones
	# empty the caches before each call, as an agent step does, and derive-step appends a
	# turn before each call (no CPU figures: wall only). scan and scan-cold read each
	# event once and derive nothing: the floor of any derivation. The payload path derives every message
	# from its payload (events without kept messages, as a hand-built slice): the walk
	# floor reads every surface payload node and derives nothing, payloads-nogc leaves out
	# the collections a call triggers (a breakdown, not a cost), the write floor returns
	# the result of that path without reading the log.
	nd = split("derive derive-loaded derive-cold derive-step scan scan-cold payloads walk walk-loaded payloads-nogc write payloads-cold walk-cold", impls, " ")
	split("DeriveMessages, live log|DeriveMessages, loaded log|DeriveMessages, cold caches|DeriveMessages, a turn appended each call|scan floor|scan floor, cold caches|payload path, live log|walk floor, live log|walk floor, loaded log|payload path without collections|write floor (payload path result)|payload path, cold caches|walk floor, cold caches", labels, "|")
	for (k = 1; k <= nd; k++) {
		impl = impls[k]; label = labels[k]
		d10 = "BenchmarkDeriveMessages/" impl "/10k"; d100 = "BenchmarkDeriveMessages/" impl "/100k"; d1m = "BenchmarkDeriveMessages/" impl "/1000k"
		printf "%-62s %8s %8s\n", "(d) " label " 100k / 10k (linear: 10×)", ratio(d100, d10), evratio(d100, d10)
		printf "%-62s %8s %8s\n", "(d) " label " 1M / 100k (linear: 10×)", ratio(d1m, d100), evratio(d1m, d100)
	}
}' "$out"
