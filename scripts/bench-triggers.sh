#!/usr/bin/env bash
# Triggers (BENCHMARKS.md, "Triggers"), in interleaved rounds, hearthd under the allocator of
# `choose_allocator`, every trigger delivering to `hearth-bench triggers`' own receiver:
#  1. deliveries: 50,000 creates written pipelined (fsync never), then the rate at which their
#     events reach the receiver, one trigger with maxConcurrency 32;
#  2. write rate: `hearth-bench lean` (50 connections, window 50, fsync never) without triggers
#     and with ten triggers on the written paths whose receiver is down (a closed port), a fresh
#     server each, with the server's CPU time;
#  3. latency: creates at 1,000 a second for 10 s (fsync always), the time from each write's
#     acknowledgement to its event's arrival, one trigger with maxConcurrency 8.
# Every load is bounded in count and time; every server is on loopback and stopped by its pid.
# Writes `<out>/triggers-<UTC time>.jsonl` and `.md`.
#
# Usage: scripts/bench-triggers.sh [--quick] [--rounds N] [--out DIR]
#   --quick    counts divided by 10
#   --rounds   rounds (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
usage="usage: scripts/bench-triggers.sh [--quick] [--rounds N] [--out DIR]"
quick=false
rounds=3
out=bench-results
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=true; shift ;;
        --rounds | --out) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; printf -v "${1#--}" '%s' "$2"; shift 2 ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done
command_line="scripts/bench-triggers.sh$(if $quick; then echo " --quick"; fi) --rounds $rounds"

hearthd=""
build_release
choose_allocator
bench_files triggers
bench=$scratch/release/hearth-bench
stop_server_on_exit
head -c 48 /dev/urandom | base64 >"$work/hook.secret"

record() { # label, then a JSON line on stdin: appends it with its label and round
    sed "s|^{|{\"label\":\"$1\",\"round\":$round,|" | tee -a "$results"
}

trigger() { # name, pattern, receiver port, max concurrency
    printf '{"name":"%s","path":"%s","on":["write"],"url":"http://127.0.0.1:%s/","secretFile":"%s","maxConcurrency":%s}' \
        "$1" "$2" "$3" "$work/hook.secret" "$4"
}

for round in $(seq "$rounds"); do
    # Part 1: the delivery rate.
    fsync=never
    receiver=$(free_port)
    echo "{\"maxWritesPerSecondPerConnection\":0,\"triggers\":[$(trigger rate '/bench/trig/{n}' "$receiver" 32)]}" \
        >"$work/rate.json"
    rm -rf "$work/data"
    start_hearthd_http "$hearthd" "$work/rate.json"
    "$bench" triggers --measure deliveries --port "$port" --receiver-port "$receiver" --count "$(scale 50000)" \
        --seconds 120 2>/dev/null | tail -1 | record "deliveries"
    stop_pid "$server_pid"
    server_pid=""

    # Part 2: writes without triggers and with ten whose receiver is down, taking turns.
    dead=$(free_port)
    triggers=""
    for n in $(seq 10); do triggers="$triggers${triggers:+,}$(trigger "dead$n" '/bench/lean/{c}' "$dead" 8)"; done
    echo '{"maxWritesPerSecondPerConnection":0}' >"$work/none.json"
    echo "{\"maxWritesPerSecondPerConnection\":0,\"triggers\":[$triggers]}" >"$work/ten.json"
    sides="none ten"
    [ $((round % 2)) = 0 ] && sides="ten none"
    for side in $sides; do
        rm -rf "$work/data"
        start_hearthd_http "$hearthd" "$work/$side.json"
        "$bench" lean --port "$port" --connections 50 --window 50 --count 20000 >/dev/null 2>&1
        cpu_before=$(cpu_ticks "$server_pid")
        line=$("$bench" lean --port "$port" --connections 50 --window 50 --count "$(scale 1000000)" --seconds 60 \
            2>/dev/null | tail -1)
        cpu=$(python3 -c "print(round(($(cpu_ticks "$server_pid") - $cpu_before) / $(getconf CLK_TCK), 2))")
        echo "{\"serverCPUSeconds\":$cpu,${line#\{}" | record "writes, $side"
        stop_pid "$server_pid"
        server_pid=""
    done

    # Part 3: latency from acknowledgement to receiver at 1,000 writes a second.
    fsync=always
    receiver=$(free_port)
    echo "{\"triggers\":[$(trigger latency '/bench/trig/{n}' "$receiver" 8)]}" >"$work/latency.json"
    rm -rf "$work/data"
    start_hearthd_http "$hearthd" "$work/latency.json"
    "$bench" triggers --measure latency --port "$port" --receiver-port "$receiver" --rate 1000 \
        --duration "$(if $quick; then echo 2; else echo 10; fi)" --seconds 60 2>/dev/null | tail -1 | record "latency"
    stop_pid "$server_pid"
    server_pid=""
done

python3 - "$results" "$command_line" "$hearthd_allocator" "$hearthd" >"$report" <<'PY'
import datetime, json, os, platform, statistics, sys

results, command, allocator, binary = sys.argv[1:5]
lines = [json.loads(l) for l in open(results) if l.strip()]
med = statistics.median
def of(label): return [l for l in lines if l["label"] == label]
out = [f"# Triggers, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC", ""]
out.append(f"- Command: `{command}`")
out.append(f"- Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()} {platform.machine()}; "
           f"load average at the end {os.getloadavg()[0]:.2f}")
out.append(f"- hearthd: `{binary}`, allocator: {allocator}; medians over the rounds")
out.append("")
out.append("| measure | value | target |")
out.append("|---|---|---|")
rate = of("deliveries")
if rate:
    value = med(l["deliveriesPerSecond"] for l in rate)
    out.append(f"| deliveries/s to a local receiver (1 trigger, maxConcurrency 32) | {value:,.0f} | ≥ 5,000 {'✅' if value >= 5000 else '❌ missed'} |")
none, ten = of("writes, none"), of("writes, ten")
if none and ten:
    a, b = med(l["opsPerSecond"] for l in none), med(l["opsPerSecond"] for l in ten)
    out.append(f"| writes/s without triggers (lean, 50 × window 50, fsync never) | {a:,.0f} | |")
    out.append(f"| writes/s with 10 triggers, receiver down | {b:,.0f} | |")
    out.append(f"| ratio | {b / a:.2f} | ≥ 0.9 {'✅' if b / a >= 0.9 else '❌ missed'} |")
    ca, cb = med(l["serverCPUSeconds"] for l in none), med(l["serverCPUSeconds"] for l in ten)
    out.append(f"| server CPU seconds for those writes, without / with | {ca:.2f} / {cb:.2f} | |")
lat = of("latency")
if lat:
    for key, name in (("p50Ms", "p50"), ("p99Ms", "p99"), ("maxMs", "max")):
        out.append(f"| ack → receiver latency {name} at 1,000 writes/s (fsync always), ms | {med(l[key] for l in lat):.2f} | |")
print("\n".join(out))
PY
cat "$report"
echo "==> $results and $report" >&2
