#!/usr/bin/env bash
# End-to-end check that a write's cost does not grow with the width of the node it touches:
# pipelined sets through a real hearthd under /bench/p, first with /bench/p empty, then with
# 1,000,000 other children there (prefilled with `update`s of 100,000 children each).
# Prints one JSON line per run (from hearth-bench) and the ratio.
#
# Usage: scripts/width-e2e.sh [children]   (default 1000000; needs python3)
set -euo pipefail
cd "$(dirname "$0")/.."
children=${1:-1000000}

swift build -c release --product hearthd >&2
swift build -c release --product hearth-bench >&2
bin=.build/release
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_server() {
    port=$(free_port)
    rm -rf "$work/data"
    "$bin/hearthd" --port "$port" --data-dir "$work/data" --fsync never --log-level warning &
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

prefill() { # $1 = port, $2 = children: string keys w0000000…, so the benchmark's keys are new
    python3 - "$1" "$2" <<'PY'
import json, socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rwb")
f.readline()  # hello
chunk = 100_000
for i, start in enumerate(range(0, n, chunk)):
    values = {"w%07d" % k: k for k in range(start, min(n, start + chunk))}
    f.write(json.dumps({"op": "update", "id": i, "path": "/bench/p", "values": values}).encode() + b"\n")
    f.flush()
    answer = json.loads(f.readline())
    if not answer.get("ok"):
        sys.exit("prefill failed: %s" % answer)
print("prefilled %d children under /bench/p" % n, file=sys.stderr)
PY
}

start_server
narrow=$("$bin/hearth-bench" pipelined --port "$port" --count 300000 --seconds 30)
echo "$narrow"
stop_server

start_server
prefill "$port" "$children"
wide=$("$bin/hearth-bench" pipelined --port "$port" --count 300000 --seconds 30)
echo "$wide"
stop_server

python3 - "$narrow" "$wide" "$children" <<'PY'
import json, sys
narrow, wide = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("pipelined sets/s: empty parent %.0f, parent with %s children %.0f (ratio %.2f)" % (
    narrow["opsPerSecond"], sys.argv[3], wide["opsPerSecond"], wide["opsPerSecond"] / narrow["opsPerSecond"]))
PY
