#!/usr/bin/env bash
# Hearth side by side with Redis: builds hearthd and hearth-bench in release mode, installs
# redis-server from the distribution's packages when it is missing, starts both servers on free
# loopback ports with fresh temporary data directories (hearthd --fsync never and Redis without
# persistence for the plain runs; hearthd --fsync always and Redis appendonly/appendfsync always
# for the fsync runs), runs every scenario against both, interleaved (hearth, redis, hearth, …),
# and writes a Markdown table (scenario | Hearth | Redis | ratio | target) plus the JSON lines.
# Every scenario is bounded in count and time; every process started here is stopped by its pid.
#
# Usage: scripts/bench.sh [--quick] [--out DIR]
#   --quick   every count (and the latency run's duration) divided by 10
#   --out     where to write bench-<UTC time>.md and .jsonl (default bench-results)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
bench_options scripts/bench.sh "$@"
command_line="scripts/bench.sh$(if $quick; then echo " --quick"; fi)"

# Idle connections need a file descriptor each, in this process's children and in the servers.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
fd_limit=$(ulimit -n)

swift build -c release --product hearthd >&2
swift build -c release --product hearth-bench >&2
bin=$scratch/release
install_missing redis-server
choose_allocator

bench_files bench
hearth_pid=""
redis_pid=""
stop_servers() {
    stop_pid "$hearth_pid"
    stop_pid "$redis_pid"
    hearth_pid=""
    redis_pid=""
}
cleanup() {
    stop_servers
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_servers() { # never | always
    stop_servers
    rm -rf "$work/hearth" "$work/redis"
    mkdir -p "$work/redis"
    hearth_port=$(free_port)
    # The per-connection write rate limit (security.md §6) is off: the scenarios measure the
    # server's throughput, and Redis has no such limit.
    echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/hearth.json"
    "${hearthd_env[@]}" "$bin/hearthd" --port "$hearth_port" --data-dir "$work/hearth" --fsync "$1" --log-level warning \
        --config "$work/hearth.json" &
    hearth_pid=$!
    redis_port=$(free_port)
    local persistence=(--save "" --appendonly no)
    [ "$1" = always ] && persistence=(--save "" --appendonly yes --appendfsync always)
    redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$work/redis" --daemonize no \
        --logfile "$work/redis/redis.log" --maxclients "$fd_limit" "${persistence[@]}" &
    redis_pid=$!
    wait_for_port "$hearth_port" hearthd
    wait_for_port "$redis_port" redis-server
}

run() { # label, target (hearth | redis | -), then hearth-bench arguments
    local label=$1 target=$2
    shift 2
    local args=("$@")
    case $target in
        hearth) args+=(--target hearth --port "$hearth_port") ;;
        redis) args+=(--target redis --port "$redis_port") ;;
    esac
    echo "==> $label ($target): hearth-bench ${args[*]}" >&2
    if ! "$bin/hearth-bench" "${args[@]}" | sed "s|^{|{\"label\":\"$label\",|" | tee -a "$results"; then
        echo "==> $label ($target) FAILED" >&2
    fi
}

both() { # label, then hearth-bench arguments: Hearth first, then Redis
    run "$1" hearth "${@:2}"
    run "$1" redis "${@:2}"
}

redis_benchmark() { # label, then redis-benchmark arguments: one JSON line with its SET rate
    local label=$1
    shift
    echo "==> $label (redis-benchmark): redis-benchmark $*" >&2
    local rate
    rate=$(redis-benchmark -p "$redis_port" "$@" -q 2>/dev/null | tr '\r' '\n' | sed -nE 's/^SET: ([0-9.]+) requests per second.*/\1/p' | tail -1)
    echo "{\"label\":\"$label\",\"scenario\":\"redis-benchmark\",\"target\":\"redis-benchmark\",\"opsPerSecond\":${rate:-0}}" | tee -a "$results"
}

lean_rounds() { # prefix: three interleaved rounds of the lean generator, Hearth then Redis
    for _ in 1 2 3; do
        both "$1 writes, 50 connections" lean --connections 50 --count "$(scale 200000)" --seconds 30
        both "$1 pipelined writes, 1 connection" lean --connections 1 --window 2000 --count "$(scale 1000000)" --seconds 30
    done
}

with_pid() { # target: the server's pid for --server-pid
    if [ "$1" = hearth ]; then echo "$hearth_pid"; else echo "$redis_pid"; fi
}

start_servers never
# The load generator check (BENCHMARKS.md "Load generators"): redis-benchmark and the lean
# generator against the same Redis, interleaved, three rounds; then the lean generator on both.
for _ in 1 2 3; do
    redis_benchmark "generator check, 50 connections" -t set -c 50 -n "$(scale 200000)"
    run "generator check, 50 connections" redis lean --connections 50 --count "$(scale 200000)" --seconds 30
    redis_benchmark "generator check, pipelined" -t set -c 1 -P 2000 -n "$(scale 2000000)"
    run "generator check, pipelined" redis lean --connections 1 --window 2000 --count "$(scale 2000000)" --seconds 30
done
lean_rounds "lean:"
both "writes, 50 connections" writes --connections 50 --count "$(scale 200000)" --seconds 30
both "pipelined writes, 1 connection" pipelined --count "$(scale 500000)" --seconds 30
run "pipelined writes under a node with 1M other children" hearth pipelined --prefill "$(scale 1000000)" \
    --count "$(scale 500000)" --seconds 30
both "fan-out to 100 subscribers" fanout --subscribers 100 --writes "$(scale 20000)" --seconds 30
both "latency, 10 subscribers at 1,000 writes/s" latency --rate 1000 --subscribers 10 --duration "$(scale 10)" --seconds 30
run "writes with 1 view among 10,000 rooms" hearth views --views 1 --rooms 10000 --writes "$(scale 100000)" --seconds 30
run "writes with 10,000 views, one per room" hearth views --views 10000 --writes "$(scale 100000)" --seconds 30

start_servers always
lean_rounds "lean: fsync always,"
both "fsync always, 1 connection" writes --connections 1 --count "$(scale 10000)" --seconds 20
both "fsync always, 50 connections" writes --connections 50 --count "$(scale 100000)" --seconds 30
both "fsync always, pipelined" pipelined --count "$(scale 200000)" --seconds 30

# Memory and idle connections each on fresh servers, so that nothing else is in their RSS.
for target in hearth redis; do
    start_servers never
    run "memory for 1M leaves" $target memory --leaves "$(scale 1000000)" --server-pid "$(with_pid $target)" --seconds 120
done
for target in hearth redis; do
    start_servers never
    run "idle subscribed connections" $target idle --connections "$(scale 20000)" --server-pid "$(with_pid $target)" --seconds 120
done
stop_servers

run "limitToLast(100) by an indexed child over 1M children" - query-index --children "$(scale 1000000)"
run "set cost by node width" - write-width --writes "$(scale 200000)"
run "restart with 1M nodes" - restart --data-dir "$work/restart" --nodes "$(scale 1000000)"

python3 - "$results" "$command_line" "$fd_limit" "$hearthd_allocator" >"$report" <<'PY'
import datetime, json, os, platform, statistics, sys

results_path, command, fd_limit = sys.argv[1], sys.argv[2].strip(), sys.argv[3]
lines = [json.loads(l) for l in open(results_path) if l.strip()]
by = {}
for r in lines:
    by[(r["label"], r.get("target", "hearth"))] = r

def num(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:,.3f}".rstrip("0").rstrip(".")

# label, metric, unit, target text, check(hearth, redis) -> True / False / None
rows = [
    ("writes, 50 connections", "opsPerSecond", "ops/s", "≥ 0.8 × Redis", lambda h, r: r and h >= 0.8 * r),
    ("writes, 50 connections", "p50Ms", "p50 ms", "", None),
    ("writes, 50 connections", "p99Ms", "p99 ms", "", None),
    ("pipelined writes, 1 connection", "opsPerSecond", "ops/s", "", None),
    ("pipelined writes under a node with 1M other children", "opsPerSecond", "ops/s",
     "≈ pipelined writes, 1 connection", None),
    ("fan-out to 100 subscribers", "eventsPerSecond", "events/s", "≥ 300,000/s and ≥ 1 × Redis",
     lambda h, r: h >= 300_000 and (r is None or h >= r)),
    ("latency, 10 subscribers at 1,000 writes/s", "p50Ms", "p50 ms", "≤ 1 ms", lambda h, r: h <= 1),
    ("latency, 10 subscribers at 1,000 writes/s", "p90Ms", "p90 ms", "", None),
    ("latency, 10 subscribers at 1,000 writes/s", "p99Ms", "p99 ms", "≤ 5 ms", lambda h, r: h <= 5),
    ("latency, 10 subscribers at 1,000 writes/s", "p999Ms", "p99.9 ms", "", None),
    ("latency, 10 subscribers at 1,000 writes/s", "maxMs", "max ms", "", None),
    ("fsync always, 1 connection", "opsPerSecond", "ops/s", "", None),
    ("fsync always, 50 connections", "opsPerSecond", "ops/s", "≥ 10,000/s and ≥ 1 × Redis",
     lambda h, r: h >= 10_000 and (r is None or h >= r)),
    ("fsync always, pipelined", "opsPerSecond", "ops/s", "", None),
    ("memory for 1M leaves", "bytesPerLeaf", "bytes/leaf", "≤ 2 × Redis", lambda h, r: r and h <= 2 * r),
    ("idle subscribed connections", "connections", "connections held", "≥ 20,000", lambda h, r: h >= 20_000),
    ("idle subscribed connections", "rssMiB", "server RSS, MiB", "≤ 2,048 MiB", lambda h, r: h <= 2048),
    ("idle subscribed connections", "bytesPerConnection", "bytes/connection", "", None),
    ("writes with 1 view among 10,000 rooms", "opsPerSecond", "ops/s", "", None),
    ("writes with 10,000 views, one per room", "opsPerSecond", "ops/s", "≈ 1 view", None),
    ("limitToLast(100) by an indexed child over 1M children", "indexedMs", "indexed, ms", "≤ 1 ms", lambda h, r: h <= 1),
    ("limitToLast(100) by an indexed child over 1M children", "speedup", "speedup over unindexed", "≥ 100×", lambda h, r: h >= 100),
    ("set cost by node width", "nsPerSetByWidth", "ns per set", "flat in the width", None),
    ("restart with 1M nodes", "recoverMs", "recovery, ms", "≤ 3,000 ms", lambda h, r: h <= 3000),
]

out = []
out.append(f"# Hearth versus Redis, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC")
out.append("")
out.append(f"- Command: `{command}`")
out.append(f"- Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()} {platform.machine()}; "
           f"open-file limit {fd_limit}; load average at the end {os.getloadavg()[0]:.2f} "
           "(other builds may share the machine)")
out.append(f"- hearthd's allocator: {sys.argv[4]}")
out.append("- Ratio is Hearth ÷ Redis. Each figure's JSON line below carries its counts and bounds.")
out.append("")
out.append("| scenario | Hearth | Redis | ratio | target |")
out.append("|---|---|---|---|---|")
for label, metric, unit, target, check in rows:
    h = by.get((label, "hearth"), {}).get(metric)
    r = by.get((label, "redis"), {}).get(metric)
    if h is None:
        continue
    if isinstance(h, dict):
        hearth = ", ".join(f"{k}: {num(v)}" for k, v in h.items())
    else:
        hearth = num(h)
    redis = num(r) if r is not None else "—"
    ratio = f"{h / r:.2f}" if isinstance(h, (int, float)) and isinstance(r, (int, float)) and r else "—"
    verdict = ""
    if check is not None and isinstance(h, (int, float)):
        verdict = " ✅" if check(h, r) else " ❌ missed"
    out.append(f"| {label} ({unit}) | {hearth} | {redis} | {ratio} | {target}{verdict} |")
out.append("")
out.append("## Load generators and the lean generator (medians of 3 interleaved rounds)")
out.append("")
medians = {}
for r in lines:
    if r.get("scenario") in ("lean", "redis-benchmark"):
        medians.setdefault((r["label"], r.get("target")), []).append(r["opsPerSecond"])
med = {k: statistics.median(v) for k, v in medians.items()}
out.append("| check | redis-benchmark on Redis | lean generator on Redis | lean ÷ redis-benchmark | target |")
out.append("|---|---|---|---|---|")
for label in ("generator check, 50 connections", "generator check, pipelined"):
    b, l = med.get((label, "redis-benchmark")), med.get((label, "redis"))
    if b and l:
        out.append(f"| {label} | {num(b)} | {num(l)} | {l / b:.2f} | ≥ 0.9 {'✅' if l >= 0.9 * b else '❌ missed'} |")
out.append("")
out.append("| scenario (lean generator, ops/s) | Hearth | Redis | ratio | target |")
out.append("|---|---|---|---|---|")
lean_targets = {
    "lean: writes, 50 connections": 0.8, "lean: pipelined writes, 1 connection": 0.5,
    "lean: fsync always, writes, 50 connections": 1.0, "lean: fsync always, pipelined writes, 1 connection": 1.0,
}
for label, goal in lean_targets.items():
    h, r = med.get((label, "hearth")), med.get((label, "redis"))
    if h and r:
        out.append(f"| {label[6:]} | {num(h)} | {num(r)} | {h / r:.2f} | ≥ {goal} × Redis {'✅' if h >= goal * r else '❌ missed'} |")
out.append("")
out.append("## JSON lines")
out.append("")
out.append("```json")
out.extend(json.dumps(r, separators=(",", ":"), ensure_ascii=False) for r in lines)
out.append("```")
print("\n".join(out))
PY
echo >&2
cat "$report"
echo "==> $report and $results" >&2
