#!/usr/bin/env bash
# Where a shared machine's CPU goes per write, for Redis 7 and hearthd side by side: interleaved
# rounds of `hearth-bench lean` (50 connections unpipelined, and one connection with a window of
# 2,000; fresh data; no fsync, or with `--fsync always` hearthd's `fsync: always` against Redis's
# `appendfsync always`), each measuring the rate, the server's user and system CPU per
# write, its busiest thread's, and the load generator's own CPU per write (`/usr/bin/time`).
# A third server, `hearth-bench nio-floor`, answers every line with fixed bytes on one SwiftNIO
# event loop (no parsing, engine or log): what SwiftNIO's own path costs per request.
#
# No rate can make the processes spend more CPU per second than there are cores, and no thread
# can be busy more than all the time. So a target rate (a ratio to Redis's in the same run) caps
# the CPU hearthd may spend per write on this machine, and what its busiest thread may spend:
#   at most cores ÷ (target × Redis's rate) − the client's CPU per write against hearthd,
#   at most 1 ÷ (target × Redis's rate) on one thread.
# Both are necessary, not sufficient (threads wait on each other and on the disk). When a run
# keeps every core busy, as the unpipelined ones do, the first is also what decides the rate.
# Writes `<out>/cpu-budget-<UTC time>.jsonl` and `.md`.
#
# Usage: scripts/cpu-budget.sh [--rounds N] [--out DIR] [--hearthd BINARY] [--fsync never|always]
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
rounds=3
out=bench-results
hearthd=""
fsync=never
value_options "usage: scripts/cpu-budget.sh [--rounds N] [--out DIR] [--hearthd BINARY] [--fsync never|always]" \
    "rounds out hearthd fsync" "$@"
case $fsync in never | always) ;; *) echo "--fsync is never or always" >&2 && exit 2 ;; esac
appendonly=(--appendonly no)
[ "$fsync" = always ] && appendonly=(--appendonly yes --appendfsync always)
install_missing redis-server /usr/bin/time:time
build_release
choose_allocator
bench_files cpu-budget
stop_server_on_exit
echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/hearth.json"
ticks=$(getconf CLK_TCK)

# Each thread's CPU ticks (user, system) and name, one line per thread.
threads() { # pid
    for task in /proc/"$1"/task/*; do
        echo "$(basename "$task") $(awk '{print $14, $15}' "$task/stat") $(tr ' ' _ <"$task/comm")"
    done
}

for round in $(seq "$rounds"); do
    servers="redis hearth nio-floor"
    [ $((round % 2)) = 0 ] && servers="nio-floor hearth redis"
    for scenario in "50 1 200000" "1 2000 1000000"; do
        read -r connections window count <<<"$scenario"
        for target in $servers; do
            rm -rf "$work/data" && mkdir -p "$work/data"
            port=$(free_port)
            if [ "$target" = redis ]; then
                redis-server --bind 127.0.0.1 --port "$port" --dir "$work/data" --save "" "${appendonly[@]}" \
                    --daemonize no --logfile "$work/data/redis.log" &
            elif [ "$target" = nio-floor ]; then
                $scratch/release/hearth-bench nio-floor --port "$port" &
            else
                "${hearthd_env[@]}" "$hearthd" --port "$port" --data-dir "$work/data" --fsync "$fsync" --log-level warning \
                    --config "$work/hearth.json" &
            fi
            server_pid=$!
            wait_for_port "$port" "$target"
            protocol=$target
            [ "$target" = nio-floor ] && protocol=hearth
            load=(--target "$protocol" --port "$port" --connections "$connections" --window "$window")
            $scratch/release/hearth-bench lean "${load[@]}" --count 20000 >/dev/null 2>&1
            threads "$server_pid" >"$work/before"
            /usr/bin/time -f '%U %S' -o "$work/client" \
                $scratch/release/hearth-bench lean "${load[@]}" --count "$count" --seconds 60 2>/dev/null |
                tail -1 >"$work/line"
            threads "$server_pid" >"$work/after"
            python3 - "$work" "$target" "$round" "$count" "$ticks" "$(nproc)" <<'EOF' | tee -a "$results" >&2
import json, sys
work, target, rnd, count, ticks, cores = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
def load(name):
    rows = {}
    for line in open(f"{work}/{name}"):
        tid, user, system, comm = line.split()
        rows[tid] = (int(user), int(system), comm)
    return rows
before, after = load("before"), load("after")
per_write = lambda t: t / ticks * 1e6 / count
user = sum(after[t][0] - before.get(t, (0, 0))[0] for t in after)
system = sum(after[t][1] - before.get(t, (0, 0))[1] for t in after)
busiest = max(after, key=lambda t: sum(after[t][:2]) - sum(before.get(t, (0, 0))[:2]))
busiest_cpu = sum(after[busiest][:2]) - sum(before.get(busiest, (0, 0))[:2])
client_user, client_system = map(float, open(f"{work}/client").read().split())
row = json.loads(open(f"{work}/line").read())
row.update(server=target, round=rnd, cores=cores,
           serverUserMicros=round(per_write(user), 2), serverSystemMicros=round(per_write(system), 2),
           busiestThread=after[busiest][2], busiestThreadMicros=round(per_write(busiest_cpu), 2),
           clientMicros=round((client_user + client_system) * 1e6 / count, 2))
print(json.dumps(row))
EOF
            stop_pid "$server_pid"
            server_pid=""
        done
    done
done

python3 - "$results" "$hearthd" "$fsync" "$hearthd_allocator" >"$report" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cores = rows[0]["cores"]
fsync = sys.argv[3] == "always"
durability = "fsync always (Redis: appendfsync always; the SwiftNIO server writes nothing)" if fsync else "no fsync"
print(f"# CPU per write, Redis 7, hearthd and a SwiftNIO server that only answers ({len(rows) // 6} interleaved rounds, medians, lean generator, {durability})\n")
print(f"hearthd: `{sys.argv[2]}`; allocator: {sys.argv[4]}; {cores} cores. CPU in µs per write; \"cores busy\" is the rate times the")
print("server's and the client's CPU per write.\n")
print("| scenario | server | writes/s | server user | server system | busiest thread | client | cores busy |")
print("|---|---|---|---|---|---|---|---|")
med = {}
for connections, window, label in [(50, 1, "50 connections"), (1, 2000, "pipelined, 1 connection")]:
    for target in ("redis", "hearth", "nio-floor"):
        sel = [r for r in rows if r["connections"] == connections and r["window"] == window and r["server"] == target]
        m = {k: statistics.median(r[k] for r in sel)
             for k in ("opsPerSecond", "serverUserMicros", "serverSystemMicros", "busiestThreadMicros", "clientMicros")}
        m["busy"] = statistics.median(
            r["opsPerSecond"] * (r["serverUserMicros"] + r["serverSystemMicros"] + r["clientMicros"]) / 1e6 for r in sel)
        med[(connections, target)] = m
        print(f"| {label} | {target} | {m['opsPerSecond']:,.0f} | {m['serverUserMicros']:.2f} | {m['serverSystemMicros']:.2f} "
              f"| {m['busiestThreadMicros']:.2f} | {m['clientMicros']:.2f} | {m['busy']:.2f} |")
print("\n## The most each target lets hearthd spend per write on this machine\n")
print("| target | Redis's rate × target | server CPU, at most | hearthd's system time now | busiest thread, at most | hearthd now: server, busiest thread | SwiftNIO floor: server | left above the floor | hearthd above the floor |")
print("|---|---|---|---|---|---|---|---|---|")
targets = ([(50, "50 connections, fsync always ≥ 1 ×", 1.0), (1, "pipelined, fsync always ≥ 1 ×", 1.0)] if fsync
           else [(50, "50 connections ≥ 0.8 ×", 0.8), (1, "pipelined ≥ 0.5 ×", 0.5)])
for connections, label, factor in targets:
    redis, hearth, floor = med[(connections, "redis")], med[(connections, "hearth")], med[(connections, "nio-floor")]
    rate = redis["opsPerSecond"] * factor
    allowed = cores / rate * 1e6 - hearth["clientMicros"]
    serial = 1e6 / rate
    print(f"| {label} | {rate:,.0f}/s | {allowed:.2f} µs | {hearth['serverSystemMicros']:.2f} µs | {serial:.2f} µs "
          f"| {hearth['serverUserMicros'] + hearth['serverSystemMicros']:.2f} µs, {hearth['busiestThreadMicros']:.2f} µs "
          f"| {floor['serverUserMicros'] + floor['serverSystemMicros']:.2f} µs "
          f"| {allowed - floor['serverUserMicros'] - floor['serverSystemMicros']:.2f} µs "
          f"| {hearth['serverUserMicros'] + hearth['serverSystemMicros'] - floor['serverUserMicros'] - floor['serverSystemMicros']:.2f} µs |")
print("\n\"Left above the floor\" is what the target leaves for everything hearthd does beyond what SwiftNIO")
print("spends answering fixed bytes (parsing, the engine, the log, the hop between threads); \"hearthd")
print("above the floor\" is what that costs now.\n")
print("Round by round (the same comparison without medians):\n")
print("| target | round | server CPU, at most | SwiftNIO floor | left above the floor |")
print("|---|---|---|---|---|")
for connections, label, factor in targets:
    for rnd in sorted({r["round"] for r in rows}):
        sel = {r["server"]: r for r in rows if r["connections"] == connections and r["round"] == rnd}
        if len(sel) < 3:
            continue
        allowed = cores / (sel["redis"]["opsPerSecond"] * factor) * 1e6 - sel["hearth"]["clientMicros"]
        floor = sel["nio-floor"]["serverUserMicros"] + sel["nio-floor"]["serverSystemMicros"]
        print(f"| {label} | {rnd} | {allowed:.2f} µs | {floor:.2f} µs | {allowed - floor:.2f} µs |")
EOF
cat "$report"
echo "wrote $report and $results" >&2
