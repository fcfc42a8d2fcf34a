#!/usr/bin/env bash
# The HTTP API against the line protocol, measured in one run with one load generator
# (BENCHMARKS.md, "HTTP API"):
#   1. unpipelined writes from 50 keep-alive connections: REST `PUT …?print=silent` against the
#      line protocol's `set` (target: REST ≥ 0.7 ×), with wrk as a second load generator for the
#      REST side (a cross-check that hearth-bench's HTTP client is not the bottleneck);
#   2. fan-out from one writer (over the line protocol in both runs) to 100 subscribers: SSE
#      streams against TCP subscriptions (target: SSE ≥ 0.8 ×);
#   3. what an idle open stream costs the server against an idle TCP subscription (RSS).
# Each pair runs interleaved (TCP, HTTP, TCP, HTTP, …) on freshly started servers; the medians go
# into a Markdown table. Builds hearthd and hearth-bench in release mode; installs wrk from the
# distribution's packages when missing. Every server is on loopback, every scenario bounded in
# count and time, every process stopped by its pid.
#
# Usage: scripts/bench-http.sh [--quick] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
bench_options scripts/bench-http.sh "$@"
rounds=3

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

swift build -c release --product hearthd >&2
swift build -c release --product hearth-bench >&2
choose_allocator
bin=$scratch/release
install_missing wrk

bench_files http
server_pid=""
stop_server() {
    stop_pid "$server_pid"
    server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# The per-connection write rate limit is off: these scenarios measure throughput.
echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/base.json"
tcp_port=""
http_port=""
start_server() {
    stop_server
    rm -rf "$work/data"
    tcp_port=$(free_port)
    http_port=$(free_port)
    "${hearthd_env[@]}" "$bin/hearthd" --port "$tcp_port" --http-port "$http_port" --data-dir "$work/data" --fsync never \
        --log-level error --config "$work/base.json" &
    server_pid=$!
    wait_for_port "$http_port" hearthd
}

run() { # label, protocol (tcp | http), then hearth-bench arguments
    local label=$1 protocol=$2
    shift 2
    local target=(--target hearth --port "$tcp_port")
    [ "$protocol" = http ] && target=(--target http --port "$http_port")
    "$bin/hearth-bench" "$@" "${target[@]}" | tail -n 1 | python3 -c '
import json, sys
line = json.loads(sys.stdin.read())
line["label"] = sys.argv[1]
print(json.dumps(line))' "$label" | tee -a "$results"
}

# wrk: 50 keep-alive connections on 2 threads, each PUT to the connection's own key.
cat >"$work/put.lua" <<'LUA'
local counter = 0
function setup(thread)
    thread:set("id", counter)
    counter = counter + 1
end
function init(args)
    n = 0
end
function request()
    n = n + 1
    return wrk.format("PUT", "/bench/w" .. id .. "-" .. (n % 50) .. ".json?print=silent", nil, tostring(n))
end
LUA
run_wrk() { # label, seconds
    local output
    output=$(wrk -t 2 -c 50 -d "$2s" -s "$work/put.lua" "http://127.0.0.1:$http_port/")
    echo "$output" >&2
    echo "$output" | python3 -c '
import json, re, sys
text = sys.stdin.read()
rate = float(re.search(r"Requests/sec:\s+([0-9.]+)", text).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(json.dumps({"label": sys.argv[1], "opsPerSecond": rate, "non2xx": int(errors.group(1)) if errors else 0}))' \
        "$1" | tee -a "$results"
}

writes=$(scale 200000)
fan_writes=$(scale 20000)
idle=$(scale 5000)
wrk_seconds=$(if $quick; then echo 3; else echo 10; fi)
for round in $(seq $rounds); do
    echo "==> round $round of $rounds" >&2
    start_server
    run "writes TCP" tcp writes --connections 50 --count "$writes" --seconds 20
    run "writes REST" http writes --connections 50 --count "$writes" --seconds 20
    run_wrk "writes REST (wrk)" "$wrk_seconds"
    start_server
    # One writer over the line protocol in both runs: what differs is the delivery of events.
    run "fanout TCP" tcp fanout --subscribers 100 --writes "$fan_writes" --seconds 30 --writer-port "$tcp_port"
    run "fanout SSE" http fanout --subscribers 100 --writes "$fan_writes" --seconds 30 --writer-port "$tcp_port"
done
for protocol in tcp http; do
    start_server
    run "idle $protocol" "$protocol" idle --connections "$idle" --server-pid "$server_pid" --seconds 60
done
stop_server

python3 - "$results" "$report" "$(uname -srm)" "$(nproc)" <<'PY'
import json, statistics, sys
results, report, system, cores = sys.argv[1:5]
lines = [json.loads(l) for l in open(results)]
def median(label, field):
    values = [l[field] for l in lines if l.get("label") == label and field in l]
    return statistics.median(values) if values else None
rows = [
    ("writes, 50 connections, unpipelined", "writes TCP", "writes REST", "opsPerSecond", "writes/s", "≥ 0.7"),
    ("writes, 50 connections (REST side by wrk)", "writes TCP", "writes REST (wrk)", "opsPerSecond", "writes/s", "≥ 0.7"),
    ("fan-out, 1 writer → 100 subscribers", "fanout TCP", "fanout SSE", "eventsPerSecond", "events/s", "≥ 0.8"),
    ("idle subscriber, server RSS per connection", "idle tcp", "idle http", "bytesPerConnection", "bytes", "≈ 1"),
]
with open(report, "w") as f:
    f.write(f"# HTTP API against the line protocol ({system}, {cores} cores), medians of the rounds\n\n")
    f.write("| measure | line protocol | HTTP API | ratio | target |\n|---|---|---|---|---|\n")
    for name, base, other, field, unit, target in rows:
        a, b = median(base, field), median(other, field)
        ratio = f"{b / a:.2f}" if a and b else "–"
        fmt = lambda v: "–" if v is None else f"{v:,.0f} {unit}"
        f.write(f"| {name} | {fmt(a)} | {fmt(b)} | {ratio} | {target} |\n")
    for label in ("writes TCP", "writes REST"):
        p50, p99 = median(label, "p50Ms"), median(label, "p99Ms")
        if p50 is not None:
            f.write(f"\n{label}: p50 {p50:.3f} ms, p99 {p99:.3f} ms.")
    f.write("\n")
print(open(report).read())
PY
echo "wrote $report and $results" >&2
