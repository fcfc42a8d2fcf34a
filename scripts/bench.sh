#!/usr/bin/env bash
# Reproduces the figures of BENCHMARKS.md: builds hearthd and hearth-bench in release mode, starts
# hearthd on loopback with a temporary data directory (once with fsync never, once with fsync
# always), runs every hearth-bench scenario, and prints one JSON line per scenario plus a
# Markdown table. Every scenario is bounded in count and time; every process started here is
# stopped by its pid.
#
# Usage: scripts/bench.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."

quick=false
[ "${1:-}" = "--quick" ] && quick=true
scale() { if $quick; then echo $(($1 / 10)); else echo "$1"; fi; }

swift build -c release --product hearthd >&2
swift build -c release --product hearth-bench >&2
bin=.build/release
work=$(mktemp -d)
results="$work/results.jsonl"
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_server() { # $1 = fsync policy
    port=$(free_port)
    rm -rf "$work/data"
    "$bin/hearthd" --port "$port" --data-dir "$work/data" --fsync "$1" --log-level warning &
    server_pid=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "hearthd did not start" >&2
    exit 1
}

stop_server() {
    kill "$server_pid"
    wait "$server_pid" || true
    server_pid=""
}

run() { # label, then hearth-bench arguments
    local label=$1
    shift
    echo "==> $label: hearth-bench $*" >&2
    "$bin/hearth-bench" "$@" | sed "s/^{/{\"label\":\"$label\",/" | tee -a "$results"
}

start_server never
run "writes, 50 connections" writes --port "$port" --connections 50 --count "$(scale 200000)" --seconds 30
run "pipelined writes, 1 connection" pipelined --port "$port" --count "$(scale 500000)" --seconds 30
run "fan-out to 100 subscribers" fanout --port "$port" --subscribers 100 --writes "$(scale 20000)" --seconds 30
run "writes with 1 view" views --port "$port" --views 1 --writes "$(scale 100000)" --seconds 30
run "writes with 10,000 views" views --port "$port" --views 10000 --writes "$(scale 100000)" --seconds 30
stop_server

start_server always
run "fsync always, 1 connection" writes --port "$port" --connections 1 --count "$(scale 10000)" --seconds 30
run "fsync always, 50 connections" writes --port "$port" --connections 50 --count "$(scale 100000)" --seconds 30
run "fsync always, pipelined" pipelined --port "$port" --count "$(scale 200000)" --seconds 30
stop_server

run "limitToLast(100) by an indexed child" query-index --children "$(scale 1000000)"
run "set cost by node width" write-width --writes "$(scale 200000)"
run "restart with 1M nodes" restart --data-dir "$work/restart" --nodes "$(scale 1000000)"

echo
echo "| scenario | result |"
echo "|---|---|"
python3 - "$results" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    keys = [k for k in ("opsPerSecond", "eventsPerSecond", "p50Ms", "p99Ms", "indexedMs", "unindexedMs",
                        "speedup", "recoverMs", "nsPerSetByWidth") if k in r]
    def fmt(v):
        return f"{v:,.3f}" if isinstance(v, float) and v < 10 else (f"{v:,.0f}" if isinstance(v, float) else json.dumps(v))
    print(f"| {r['label']} | " + ", ".join(f"{k} {fmt(r[k])}" for k in keys) + " |")
PY
