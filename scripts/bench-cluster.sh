#!/usr/bin/env bash
# The cluster figures of BENCHMARKS.md (replication.md §11), in one run on this machine: write
# rates of a 3-node cluster under syncReplicas 1 against one standalone node (50 connections
# unpipelined, and one pipelined connection), replica lag at the leader's full write rate (async
# cluster), the time from a leader's kill -9 to the first write the new leader acknowledges, and
# fan-out with subscribers spread over the three nodes against all on one node.
#
#   scripts/bench-cluster.sh [--quick] [--out DIR] [--fsync always|never] [--rounds N]
#
# The write-rate runs also record each node's CPU time per write (user + system, from
# /proc/<pid>/stat) and the machine's idle time per write (from /proc/stat), which show what
# bounds the ratios on a machine the nodes share. `--fsync never` (default always) takes the
# shared disk out of those runs. The write rates run in `--rounds` interleaved rounds (default 5,
# 1 with `--quick`); the report gives each configuration's median and its ratio to standalone both
# as a ratio of medians and as the median of each round's ratio.
# Needs /usr/bin/etcd (Debian's etcd-server). Every process is on loopback and stopped by its pid.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
fsync=always
rounds=5
args=()
while [ $# -gt 0 ]; do
    if [ "$1" = --fsync ] && [ $# -ge 2 ]; then
        fsync=$2
        shift 2
    elif [ "$1" = --rounds ] && [ $# -ge 2 ]; then
        rounds=$2
        shift 2
    else
        args+=("$1")
        shift
    fi
done
case $fsync in always | never) ;; *) echo "--fsync must be always or never" >&2; exit 2 ;; esac
case $rounds in '' | *[!0-9]* | 0) echo "--rounds must be a positive number" >&2; exit 2 ;; esac
bench_options "scripts/bench-cluster.sh [--fsync always|never] [--rounds N]" "${args[@]}"
command_line="scripts/bench-cluster.sh$(if $quick; then echo " --quick"; fi) --fsync $fsync --rounds $rounds"

swift build -c release --product hearthd >&2
swift build -c release --product hearth-bench >&2
choose_allocator
bin=$scratch/release

bench_files bench-cluster
stop_pids_on_exit

lease=2
start_etcd bench

# start_node NAME SYNC_REPLICAS CLUSTER(yes|no): starts hearthd, sets `port` and `http` and `pid`.
start_node() {
    local name=$1 sync=$2 cluster=$3
    port=$(free_port)
    http=$(free_port)
    local cluster_json=""
    local args=()
    if [ "$cluster" = yes ]; then
        cluster_json=",\"cluster\":{\"leaseSeconds\":$lease,\"syncReplicas\":$sync}"
        args=(--cluster-etcd "http://127.0.0.1:$etcd_port" --cluster-name "bench-${name%%-*}" --node "$name")
    fi
    # Metrics rendered at each scrape: the replica lag is sampled every 100 ms.
    echo "{\"maxWritesPerSecondPerConnection\":0,\"metricsCacheMilliseconds\":0$cluster_json}" >"$work/$name.json"
    HEARTH_CLUSTER_SECRET=bench-secret "${hearthd_env[@]}" "$bin/hearthd" --port "$port" --http-port "$http" --data-dir "$work/$name" \
        --fsync "$fsync" --log-level warning --config "$work/$name.json" "${args[@]}" 2>>"$work/$name.log" &
    pid=$!
    pids+=("$pid")
    wait_for_port "$port" "hearthd $name"
}

# CPU clock ticks (user + system) a process used, and the machine's idle (+ iowait) ticks.
idle_ticks() { awk '/^cpu /{print $5 + $6}' /proc/stat; }

round_tag=""
cpu_pids=()  # name=pid pairs whose CPU time per write `run` records (empty: none)
run() { # label, port, then hearth-bench arguments
    local label=$1 target_port=$2
    shift 2
    echo "==> $label: hearth-bench $* --port $target_port" >&2
    local before=() entry idle_before line after=()
    for entry in "${cpu_pids[@]}"; do before+=("$(cpu_ticks "${entry#*=}")"); done
    idle_before=$(idle_ticks)
    line=$("$bin/hearth-bench" "$@" --target hearth --port "$target_port")
    for entry in "${cpu_pids[@]}"; do after+=("${entry%%=*}=$(cpu_ticks "${entry#*=}")"); done
    python3 - "$line" "$label" "$round_tag" "$(getconf CLK_TCK)" "$idle_before" "$(idle_ticks)" \
        "${before[@]}" -- "${after[@]}" <<'PY' | tee -a "$results"
import json, sys
line, label, round_tag, hz, idle_before, idle_after = sys.argv[1:7]
rest = sys.argv[7:]
split = rest.index("--")
before, after = rest[:split], rest[split + 1:]
result = json.loads(line)
row = {"label": label}
if round_tag:
    row["round"] = int(round_tag)
row.update(result)
writes = result.get("writes", 0)
if after and writes:
    per_write = lambda ticks: round(ticks * 1e6 / int(hz) / writes, 1)
    row["cpuMicrosPerWrite"] = {a.split("=")[0]: per_write(int(a.split("=")[1]) - int(b)) for a, b in zip(after, before)}
    row["machineIdleMicrosPerWrite"] = per_write(int(idle_after) - int(idle_before))
print(json.dumps(row))
PY
}

writes=$(scale 200000)
pipelined=$(scale 400000)

# 1. Write rates, in interleaved rounds (runs on this machine differ by 10-25 %, and rounds of one
# run by up to 1.7 ×; the report gives medians): standalone, then clusters with syncReplicas 1 (writes to the leader) of two nodes (a
# leader and the one replica syncReplicas 1 needs) and of three: on two shared cores every node
# added takes CPU from the leader, which a cluster of machines would not.
if $quick; then rounds=1; fi
for round in $(seq "$rounds"); do
    round_tag=$round
    start_node "solo-$round" 0 no
    solo_pid=$pid
    cpu_pids=("standalone=$pid")
    run "standalone, 50 connections" "$port" lean --connections 50 --window 1 --count "$writes" --seconds 60
    run "standalone, pipelined" "$port" lean --connections 1 --window 2000 --count "$pipelined" --seconds 60
    stop_pid "$solo_pid"
    for nodes in 2 3; do
        ports=()
        node_pids=()
        for n in $(seq "$nodes"); do
            start_node "s$nodes-$n-r$round" 1 yes
            ports+=("$port")
            node_pids+=("$pid")
        done
        leader=$(leader_port "${ports[@]}")
        cpu_pids=()
        for i in "${!ports[@]}"; do
            if [ "${ports[$i]}" = "$leader" ]; then cpu_pids+=("leader=${node_pids[$i]}"); fi
        done
        for i in "${!ports[@]}"; do
            if [ "${ports[$i]}" != "$leader" ]; then cpu_pids+=("replica$i=${node_pids[$i]}"); fi
        done
        sleep 1
        run "syncReplicas 1, $nodes nodes, 50 connections" "$leader" lean --connections 50 --window 1 --count "$writes" \
            --seconds 60
        run "syncReplicas 1, $nodes nodes, pipelined" "$leader" lean --connections 1 --window 2000 --count "$pipelined" \
            --seconds 60
        for p in "${node_pids[@]}"; do stop_pid "$p"; done
    done
done
round_tag=""
cpu_pids=()

# 2. An async cluster: lag at full rate, fan-out, failover.
async_ports=()
async_http=()
async_pids=()
for n in 1 2 3; do
    start_node "a-$n" 0 yes
    async_ports+=("$port")
    async_http+=("$http")
    async_pids+=("$pid")
done
leader=$(leader_port "${async_ports[@]}")
for i in 0 1 2; do [ "${async_ports[$i]}" = "$leader" ] && leader_http=${async_http[$i]}; done
sleep 1
# Sample the leader's replica-lag gauges every 100 ms while a pipelined writer runs flat out.
python3 - "$leader_http" "$work/lag.txt" <<'PY' &
import sys, time, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/.well-known/hearth/metrics"
end = time.time() + 120
with open(sys.argv[2], "w") as out:
    while time.time() < end:
        try:
            text = urllib.request.urlopen(url, timeout=1).read().decode()
        except Exception:
            break
        for line in text.splitlines():
            if line.startswith("hearth_cluster_replica_lag_ms{"):
                out.write(line.rsplit(" ", 1)[1] + "\n")
        out.flush()
        time.sleep(0.1)
PY
sampler=$!
pids+=("$sampler")
run "async cluster, pipelined (lag sampled)" "$leader" lean --connections 1 --window 2000 --count "$pipelined" --seconds 60
run "async cluster, 50 connections" "$leader" lean --connections 50 --window 1 --count "$writes" --seconds 60
stop_pid "$sampler"
python3 - "$work/lag.txt" <<'PY' | tee -a "$results"
import json, sys
values = sorted(float(v) for v in open(sys.argv[1]) if v.strip())
def pct(p): return values[min(len(values) - 1, int(p * len(values)))] if values else None
print(json.dumps({"label": "replica lag at full write rate (ms, sampled every 100 ms)",
                  "samples": len(values), "p50": pct(0.5), "p99": pct(0.99), "max": values[-1] if values else None}))
PY

subscribers=$(scale 300)
fan_writes=$(scale 20000)
all=$(IFS=,; echo "${async_ports[*]}")
run "fan-out, subscribers on the 3 nodes" "$leader" fanout --subscribers "$subscribers" --writes "$fan_writes" \
    --subscriber-ports "$all" --seconds 60
run "fan-out, subscribers on 1 node" "$leader" fanout --subscribers "$subscribers" --writes "$fan_writes" --seconds 60

# Failover: a writer on a replica (forwarded, with write ids) writes in a loop; the leader is
# killed with SIGKILL; the time to the first write acknowledged after that is the failover time.
replica=""
for p in "${async_ports[@]}"; do [ "$p" != "$leader" ] && replica=$p && break; done
leader_pid=""
for i in 0 1 2; do [ "${async_ports[$i]}" = "$leader" ] && leader_pid=${async_pids[$i]}; done
python3 - "$replica" "$leader_pid" "$lease" <<'PY' | tee -a "$results"
import json, os, signal, socket, sys, time
port, victim, lease = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port)); f = s.makefile("rw"); f.readline()
killed = None; i = 0
while True:
    i += 1
    f.write(json.dumps({"op": "set", "id": i, "path": f"/failover/{i}", "value": i, "wid": f"fo:{i}"}) + "\n"); f.flush()
    while True:
        answer = json.loads(f.readline())
        if answer.get("id") == i: break
    if answer.get("ok") and killed is not None:
        print(json.dumps({"label": "failover: leader kill -9 to the first acknowledged write",
                          "seconds": round(time.time() - killed, 3), "leaseSeconds": lease}))
        break
    if i == 200 and killed is None:
        os.kill(victim, signal.SIGKILL); killed = time.time()
    if killed and time.time() - killed > 30:
        print(json.dumps({"label": "failover", "error": "no write acknowledged within 30 s"})); break
PY

{
    echo "# Cluster benchmarks, $stamp"
    echo
    echo "Command: \`$command_line\` on $(nproc) cores ($(uname -m)); leaseSeconds $lease; fsync $fsync."
    echo
    echo "| scenario | result |"
    echo "|---|---|"
    python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
rates = {}
for r in rows:
    if "round" in r:
        rates.setdefault(r["label"], []).append(r["opsPerSecond"])
for r in rows:
    if "round" not in r:
        rest = {k: v for k, v in r.items() if k != "label"}
        print(f"| {r['label']} | {json.dumps(rest)} |")
print()
print("Write rates, median of the rounds (each round runs every configuration in turn). The last")
print("column divides each round's rate by the standalone rate of the same round (the machine's")
print("speed drifts between rounds more than within one) and gives the median of those ratios:")
print()
print("| configuration | writes/s per round | median | ÷ standalone (medians) | ÷ standalone, each round (median) |")
print("|---|---|---|---|---|")
for label, values in rates.items():
    median = statistics.median(values)
    load = "50 connections" if label.endswith("50 connections") else "pipelined"
    standalone = rates.get(f"standalone, {load}", values)
    base = statistics.median(standalone)
    rounds = ", ".join(f"{v:,.0f}" for v in values)
    paired = [v / s for v, s in zip(values, standalone)]
    each = ", ".join(f"{p:.2f}" for p in paired)
    print(f"| {label} | {rounds} | {median:,.0f} | {median / base:.2f} | {each} ({statistics.median(paired):.2f}) |")
cpu = {}
for r in rows:
    if "cpuMicrosPerWrite" in r:
        entry = cpu.setdefault(r["label"], {"idle": []})
        entry["idle"].append(r["machineIdleMicrosPerWrite"])
        for name, micros in r["cpuMicrosPerWrite"].items():
            entry.setdefault("replica" if name.startswith("replica") else name, []).append(micros)
print()
print("CPU time per write (µs, user + system, median of the rounds; replicas: each one's), and the")
print("machine's idle time per write (both cores, iowait included):")
print()
print("| configuration | standalone or leader | replica | machine idle |")
print("|---|---|---|---|")
for label, entry in cpu.items():
    node = entry.get("standalone") or entry.get("leader") or []
    replica = entry.get("replica", [])
    cell = lambda values: f"{statistics.median(values):.1f}" if values else "—"
    print(f"| {label} | {cell(node)} | {cell(replica)} | {cell(entry['idle'])} |")
PY
} >"$report"
echo "==> wrote $results and $report" >&2
