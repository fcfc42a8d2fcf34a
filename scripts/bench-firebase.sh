#!/usr/bin/env bash
# Firebase's realtime protocol against the line protocol (BENCHMARKS.md, "Firebase's protocol"),
# the same server, the same raw-socket generators, in interleaved rounds:
#  1. writes: `hearth-bench lean` at 50 connections, pipelined (window 50) and not (window 1),
#     over the line protocol and with --firebase over WebSocket (fsync never);
#  2. fan-out: `hearth-bench fanout-raw`, one line-protocol writer, 100 listeners of one path in
#     either protocol (events delivered per second);
#  3. idle: `hearth-bench idle-raw`, 10,000 idle connections with one listen each, a fresh server
#     per protocol: the server's resident memory per connection.
# Every load is bounded in count and time; every server is on loopback and stopped by its pid.
# Writes `<out>/firebase-<UTC time>.jsonl` and `.md`.
#
# Usage: scripts/bench-firebase.sh [--quick] [--rounds N] [--out DIR]
#   --quick    counts divided by 10
#   --rounds   rounds of parts 1 and 2 (default 4: each protocol goes first equally often)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
usage="usage: scripts/bench-firebase.sh [--quick] [--rounds N] [--out DIR]"
quick=false
rounds=4
out=bench-results
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=true; shift ;;
        --rounds | --out) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; printf -v "${1#--}" '%s' "$2"; shift 2 ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done
command_line="scripts/bench-firebase.sh$(if $quick; then echo " --quick"; fi) --rounds $rounds"

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
hearthd=""
build_release
choose_allocator
bench_files firebase
bench=$scratch/release/hearth-bench
fsync=never
stop_server_on_exit
echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/hearth.json"

record() { # label, then a JSON line on stdin: appends it with its label and round
    sed "s|^{|{\"label\":\"$1\",\"round\":$round,|" | tee -a "$results"
}

# Parts 1 and 2: one server per round, both protocols taking turns within it.
for round in $(seq "$rounds"); do
    rm -rf "$work/data"
    start_hearthd_http "$hearthd"
    wires="line firebase"
    [ $((round % 2)) = 0 ] && wires="firebase line"
    "$bench" lean --port "$port" --connections 50 --window 50 --count 20000 >/dev/null 2>&1
    for window in 50 1; do
        count=$(scale 1000000)
        [ "$window" = 1 ] && count=$(scale 200000)
        for wire in $wires; do
            flags=(--port "$port")
            [ "$wire" = firebase ] && flags=(--firebase --port "$http_port")
            cpu_before=$(cpu_ticks "$server_pid")
            line=$("$bench" lean "${flags[@]}" --connections 50 --window "$window" --count "$count" --seconds 60 \
                2>/dev/null | tail -1)
            cpu=$(python3 -c "print(round(($(cpu_ticks "$server_pid") - $cpu_before) / $(getconf CLK_TCK), 2))")
            echo "{\"serverCPUSeconds\":$cpu,${line#\{}" | record "writes, window $window, $wire"
        done
    done
    for wire in $wires; do
        "$bench" fanout-raw --wire "$wire" --port "$port" --http-port "$http_port" --listeners 100 \
            --writes "$(scale 20000)" --seconds 60 2>/dev/null | tail -1 | record "fan-out to 100, $wire"
    done
    stop_pid "$server_pid"
    server_pid=""
done

# Part 3: idle listeners, a fresh server per protocol.
round=1
for wire in line firebase; do
    rm -rf "$work/data"
    start_hearthd_http "$hearthd"
    "$bench" idle-raw --wire "$wire" --port "$port" --http-port "$http_port" --connections "$(scale 10000)" \
        --server-pid "$server_pid" --seconds 120 2>/dev/null | tail -1 | record "idle, $wire"
    stop_pid "$server_pid"
    server_pid=""
done

python3 - "$results" "$command_line" "$hearthd_allocator" "$hearthd" >"$report" <<'PY'
import datetime, json, os, platform, statistics, sys

results, command, allocator, binary = sys.argv[1:5]
lines = [json.loads(l) for l in open(results) if l.strip()]
med = statistics.median
out = [f"# Firebase's realtime protocol against the line protocol, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC", ""]
out.append(f"- Command: `{command}`")
out.append(f"- Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()} {platform.machine()}; "
           f"load average at the end {os.getloadavg()[0]:.2f}")
out.append(f"- hearthd: `{binary}`, allocator: {allocator}; fsync never; medians over the rounds")
out.append("")
out.append("| measure | line protocol | Firebase's protocol | Firebase ÷ line | target |")
out.append("|---|---|---|---|---|")
def row(name, label, key, target, digits=0, per=None):
    a = [l for l in lines if l["label"] == f"{label}, line"]
    b = [l for l in lines if l["label"] == f"{label}, firebase"]
    if not a or not b:
        return
    x, y = med(l[key] for l in a), med(l[key] for l in b)
    ratio = y / x if x else 0
    verdict = ""
    if target:
        verdict = f"≥ {target} {'✅' if ratio >= target else '❌ missed'}"
    out.append(f"| {name} | {x:,.{digits}f} | {y:,.{digits}f} | {ratio:.2f} | {verdict} |")
row("writes/s, 50 connections, window 50", "writes, window 50", "opsPerSecond", 0.8)
row("writes/s, 50 connections, unpipelined", "writes, window 1", "opsPerSecond", None)
row("server CPU seconds for those writes", "writes, window 50", "serverCPUSeconds", None, 2)
row("events/s, 1 writer → 100 listeners", "fan-out to 100", "eventsPerSecond", 0.8)
row("resident bytes per idle listening connection", "idle", "bytesPerConnection", None)
idle = [l for l in lines if l["label"].startswith("idle")]
if idle:
    out.append("")
    out.append("Idle: " + "; ".join(f"{l['wire']}: {l['connections']:,} connections, RSS {l['rssBeforeMiB']} → {l['rssMiB']} MiB" for l in idle) + ".")
print("\n".join(out))
PY
cat "$report"
echo "==> $results and $report" >&2
