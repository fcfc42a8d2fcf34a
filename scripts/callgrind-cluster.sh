#!/usr/bin/env bash
# What a leader pays per write beyond a standalone node, in user-space instructions
# (deterministic where wall time on this shared machine is not): the same lean load against a
# standalone hearthd and against the leader of a 2-node cluster with `syncReplicas: 1`, each
# under `valgrind --tool=callgrind` (the replica runs natively). Reports the totals per write,
# the cluster's own stages, and the functions whose inclusive counts differ most.
#
#   scripts/callgrind-cluster.sh [--writes N] [--connections C] [--window W] [--hearthd BINARY] [--out DIR]
#
# Defaults: 20,000 writes, one connection with a window of 2,000, fsync never on both nodes.
# Writes `<out>/callgrind-cluster-<UTC time>.md` and `.jsonl`. Needs /usr/bin/etcd and valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
writes=20000
connections=1
window=2000
out=bench-results
hearthd=""
value_options "usage: scripts/callgrind-cluster.sh [--writes N] [--connections C] [--window W] [--hearthd BINARY] [--out DIR]" \
    "writes connections window hearthd out" "$@"
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 2; }
if [ -z "$hearthd" ]; then
    swift build -c release --product hearthd >&2
    hearthd=.build/release/hearthd
fi
swift build -c release --product hearth-bench >&2
bench_files callgrind-cluster
pids=()
cleanup() {
    for pid in "${pids[@]}"; do stop_pid "$pid"; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
objcopy --strip-debug "$hearthd" "$work/hearthd"

start_etcd cg

# node_args NAME CLUSTER(yes|no): the arguments of one hearthd (a long lease: valgrind is slow).
node_args() {
    local name=$1 cluster=$2 cluster_json="" extra=()
    if [ "$cluster" = yes ]; then
        cluster_json=',"cluster":{"leaseSeconds":10,"syncReplicas":1}'
        extra=(--cluster-etcd "http://127.0.0.1:$etcd_port" --cluster-name cg --node "$name")
    fi
    echo "{\"maxWritesPerSecondPerConnection\":0$cluster_json}" >"$work/$name.json"
    node=(--port "$port" --http-port "$(free_port)" --data-dir "$work/$name" --fsync never --log-level warning
        --config "$work/$name.json" "${extra[@]}")
}

measure() { # label, cluster (yes|no)
    local label=$1 cluster=$2 profile="$work/$1.out"
    port=$(free_port)
    node_args "$label" "$cluster"
    local measured_port=$port
    HEARTH_CLUSTER_SECRET=callgrind valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$profile" \
        "$work/hearthd" "${node[@]}" 2>"$work/$label-valgrind.log" &
    local server=$!
    pids+=("$server")
    for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$measured_port") 2>/dev/null && break; sleep 0.1; done
    local replica=""
    if [ "$cluster" = yes ]; then
        sleep 8 # the node under valgrind takes the lease first
        port=$(free_port)
        node_args replica yes
        HEARTH_CLUSTER_SECRET=callgrind "$work/hearthd" "${node[@]}" 2>"$work/replica.log" &
        replica=$!
        pids+=("$replica")
        wait_for_port "$port" replica
        sleep 8 # until it streams
    fi
    local load=(--target hearth --port "$measured_port" --connections "$connections" --window "$window" --seconds 600)
    echo "==> $label: warm-up, then $writes writes under callgrind" >&2
    .build/release/hearth-bench lean "${load[@]}" --count $((writes / 5)) >/dev/null
    callgrind_control -i on "$server" >/dev/null
    .build/release/hearth-bench lean "${load[@]}" --count "$writes" >/dev/null
    callgrind_control -i off "$server" >/dev/null
    stop_pid "$server"
    stop_pid "$replica"
    callgrind_annotate --inclusive=yes --threshold=99.9 "$profile" | swift demangle --simplified >"$work/$label.txt"
}

measure standalone no
measure leader yes

python3 - "$work/standalone.txt" "$work/leader.txt" "$writes" "$connections" "$window" "$results" <<'EOF' >"$report"
import json, re, sys
standalone_path, leader_path, writes, connections, window, results = sys.argv[1:7]
writes = int(writes)

def load(path):
    inclusive, total = {}, 0
    for line in open(path):
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
        if not m:
            continue
        count, name = int(m.group(1).replace(",", "")), m.group(2)
        if name.startswith("PROGRAM TOTALS"):
            total = count
            continue
        name = re.sub(r"^\S*?:", "", name, count=1)
        name = re.sub(r" \[.*\]$", "", name)
        name = re.sub(r"^(specialized |static )+", "", name)
        name = re.sub(r"'\d+$", "", name)
        inclusive[name] = max(inclusive.get(name, 0), count)
    return total / writes, {k: v / writes for k, v in inclusive.items()}

solo_total, solo = load(standalone_path)
leader_total, leader = load(leader_path)
stages = [
    ("engine turn", "Engine.drain()"),
    ("commit (log, stream, retain)", "Engine.commit(_:)"),
    ("encode the batch's records", "Batch.encodedRecords()"),
    ("stream before the fsync", "Engine.streamBeforeSync(_:batch:)"),
    ("retain and stream after", "Engine.replicationCommitted(_:streamed:now:batch:)"),
    ("retained log", "RetainedLog.append(_:)"),
    ("frame and parse the request", "RequestDecoder.decode(_:reusing:)"),
]
row = {"scenario": "callgrind-cluster", "writes": writes, "connections": int(connections), "window": int(window),
       "standalone": round(solo_total), "leader": round(leader_total)}
for label, name in stages:
    row[label] = [round(solo.get(name, 0)), round(leader.get(name, 0))]
with open(results, "a") as out:
    out.write(json.dumps(row) + "\n")
print(f"# callgrind: a leader's instructions per write against a standalone node\n")
print(f"From `scripts/callgrind-cluster.sh`: {writes:,} writes, {connections} connection(s), window {window},")
print("fsync never; the leader of 2 nodes with `syncReplicas: 1` (its replica not measured).\n")
print(f"**standalone**: {solo_total:,.0f} instructions per write; **leader**: {leader_total:,.0f} "
      f"({leader_total / solo_total:.2f} ×)\n")
print("| stage (inclusive) | standalone | leader |\n|---|---|---|")
for label, name in stages:
    print(f"| {label} | {solo.get(name, 0):,.0f} | {leader.get(name, 0):,.0f} |")
print("\nThe functions whose inclusive count per write grew most:\n")
print("| function | standalone | leader | difference |\n|---|---|---|---|")
grown = sorted(set(solo) | set(leader), key=lambda k: solo.get(k, 0) - leader.get(k, 0))
for name in [n for n in grown if not n.startswith(("SelectableEventLoop", "Selector", "closure", "partial apply",
                                                   "protocol witness", "thunk"))][:20]:
    print(f"| `{name[:110]}` | {solo.get(name, 0):,.0f} | {leader.get(name, 0):,.0f} | "
          f"{leader.get(name, 0) - solo.get(name, 0):+,.0f} |")
EOF
cat "$report"
echo "wrote $report and $results" >&2
