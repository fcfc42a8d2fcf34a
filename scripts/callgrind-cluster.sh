#!/usr/bin/env bash
# What a cluster node pays per write against a standalone node, in user-space instructions
# (deterministic where wall time on this shared machine is not): the same lean load against a
# standalone hearthd and against the leader of a 2-node cluster with `syncReplicas: 1`, with the
# standalone node and then the leader (`--node leader`) or the replica (`--node replica`) under
# `valgrind --tool=callgrind`; the other node runs natively. Reports the totals per write, the
# cluster's own stages, and the functions whose inclusive counts differ most.
#
#   scripts/callgrind-cluster.sh [--node leader|replica] [--writes N] [--connections C] [--window W]
#                                [--hearthd BINARY] [--out DIR] [--profiles DIR]
#
# Defaults: the leader, 20,000 writes, one connection with a window of 2,000, fsync never on both
# nodes.
# `--profiles DIR` keeps both profiles and their annotated listings in DIR (as callgrind.sh does).
# Writes `<out>/callgrind-cluster-<UTC time>.md` and `.jsonl`. Needs /usr/bin/etcd; installs valgrind when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
writes=20000
connections=1
window=2000
out=bench-results
hearthd=""
node=leader
profiles=""
value_options "usage: scripts/callgrind-cluster.sh [--node leader|replica] [--writes N] [--connections C] [--window W] [--hearthd BINARY] [--out DIR] [--profiles DIR]" \
    "node writes connections window hearthd out profiles" "$@"
case $node in leader | replica) ;; *) echo "--node must be leader or replica" >&2; exit 2 ;; esac
measured_node=$node
install_missing valgrind
build_release
choose_allocator
bench_files callgrind-cluster
stop_pids_on_exit
objcopy --strip-debug "$hearthd" "$work/hearthd"

start_etcd cg

# node_args NAME CLUSTER(yes|no): sets `node_cmd`, the arguments of one hearthd (a long lease:
# valgrind is slow).
node_args() {
    local name=$1 cluster=$2 cluster_json="" extra=()
    if [ "$cluster" = yes ]; then
        cluster_json=',"cluster":{"leaseSeconds":10,"syncReplicas":1}'
        extra=(--cluster-etcd "http://127.0.0.1:$etcd_port" --cluster-name cg --node "$name")
    fi
    echo "{\"maxWritesPerSecondPerConnection\":0$cluster_json}" >"$work/$name.json"
    node_cmd=(--port "$port" --http-port "$(free_port)" --data-dir "$work/$name" --fsync never --log-level warning
        --config "$work/$name.json" "${extra[@]}")
}

# start NAME CLUSTER(yes|no) VALGRIND(yes|no): starts one hearthd on a free port; sets `started`
# (its pid) and `started_port`.
start() {
    local name=$1 cluster=$2 profiled=$3
    port=$(free_port)
    node_args "$name" "$cluster"
    started_port=$port
    if [ "$profiled" = yes ]; then
        HEARTH_CLUSTER_SECRET=callgrind "${hearthd_env[@]}" valgrind --tool=callgrind --instr-atstart=no \
            --callgrind-out-file="$work/$name.out" "$work/hearthd" "${node_cmd[@]}" 2>"$work/$name-valgrind.log" &
    else
        HEARTH_CLUSTER_SECRET=callgrind "${hearthd_env[@]}" "$work/hearthd" "${node_cmd[@]}" 2>"$work/$name.log" &
    fi
    started=$!
    pids+=("$started")
    for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$started_port") 2>/dev/null && return 0; sleep 0.1; done
    echo "$name did not start on port $started_port" >&2
    exit 1
}

measure() { # label: standalone, leader or replica
    local label=$1 profiled loaded others=()
    if [ "$label" = standalone ]; then
        start standalone no yes
        profiled=$started loaded=$started_port
    else
        # The first node takes the lease (the other waits for it before it runs for election).
        start leader yes "$([ "$label" = leader ] && echo yes || echo no)"
        local leader=$started
        loaded=$started_port
        sleep 8
        start replica yes "$([ "$label" = replica ] && echo yes || echo no)"
        local replica=$started
        sleep 8 # until it streams
        if [ "$label" = leader ]; then profiled=$leader others=("$replica"); else profiled=$replica others=("$leader"); fi
    fi
    local load=(--target hearth --port "$loaded" --connections "$connections" --window "$window" --seconds 600)
    echo "==> $label: warm-up, then $writes writes under callgrind" >&2
    $scratch/release/hearth-bench lean "${load[@]}" --count $((writes / 5)) >/dev/null
    callgrind_control -i on "$profiled" >/dev/null
    $scratch/release/hearth-bench lean "${load[@]}" --count "$writes" >/dev/null
    # A replica acknowledges a write before it has done with it (its views, its retained log).
    if [ "$label" = replica ]; then sleep 2; fi
    callgrind_control -i off "$profiled" >/dev/null
    stop_pid "$profiled"
    for pid in "${others[@]}"; do stop_pid "$pid"; done
    callgrind_annotate --inclusive=yes --threshold=99.9 "$work/$label.out" | swift demangle --simplified \
        >"$work/$label.txt"
    if [ -n "$profiles" ]; then mkdir -p "$profiles" && cp "$work/$label.out" "$work/$label.txt" "$profiles/"; fi
}

measure standalone
measure "$measured_node"

python3 - "$work/standalone.txt" "$work/$measured_node.txt" "$writes" "$connections" "$window" "$results" \
    "$measured_node" <<'EOF' >"$report"
import json, re, sys
standalone_path, leader_path, writes, connections, window, results, role = sys.argv[1:8]
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
node_total, node = load(leader_path)
common = [
    ("engine turn", "Engine.drain()"),
    ("commit (log, stream, retain)", "Engine.commit(_:)"),
    ("retain and stream after", "ClusterReplicator.replicationCommitted(_:streamed:now:batch:)"),
    ("retained log", "RetainedLog.append(_:)"),
]
if role == "leader":
    stages = common[:2] + [
        ("encode the batch's records", "Batch.encodedRecords()"),
        ("stream before the fsync", "ClusterReplicator.streamBeforeSync(_:batch:)"),
    ] + common[2:] + [("frame and parse the request", "RequestDecoder.decode(_:reusing:paths:)")]
else:
    stages = common + [
        ("frame and parse the request", "RequestDecoder.decode(_:reusing:paths:)"),
        ("read and decode the leader's records", "LinkHandler.received(_:context:)"),
        ("decode a record's payload", "ReplicatedRecord.decodeWrite(_:rev:previousPath:reusing:)"),
        ("apply a record (replay)", "ClusterReplicator.replay(_:recordingWith:now:batch:)"),
        ("log append", "Storage.append(_:beforeSync:)"),
    ]
row = {"scenario": "callgrind-cluster", "node": role, "writes": writes, "connections": int(connections),
       "window": int(window), "standalone": round(solo_total), role: round(node_total)}
def stage(counts, name):
    # Replication's functions were the engine's before they moved to ClusterReplicator: a build
    # from before the move is counted under their old names.
    return counts.get(name, counts.get(name.replace("ClusterReplicator.", "Engine.", 1), 0))


for label, name in stages:
    row[label] = [round(stage(solo, name)), round(stage(node, name))]
with open(results, "a") as out:
    out.write(json.dumps(row) + "\n")
print(f"# callgrind: a {role}'s instructions per write against a standalone node\n")
print(f"From `scripts/callgrind-cluster.sh --node {role}`: {writes:,} writes, {connections} connection(s), "
      f"window {window},")
print(f"fsync never; the {role} of 2 nodes with `syncReplicas: 1` (the other node not measured).\n")
print(f"**standalone**: {solo_total:,.0f} instructions per write; **{role}**: {node_total:,.0f} "
      f"({node_total / solo_total:.2f} ×)\n")
print(f"| stage (inclusive) | standalone | {role} |\n|---|---|---|")
for label, name in stages:
    print(f"| {label} | {stage(solo, name):,.0f} | {stage(node, name):,.0f} |")
print(f"\nThe functions whose inclusive count per write differs most:\n")
print(f"| function | standalone | {role} | difference |\n|---|---|---|---|")
changed = sorted(set(solo) | set(node), key=lambda k: -abs(node.get(k, 0) - solo.get(k, 0)))
for name in [n for n in changed if not n.startswith(("SelectableEventLoop", "Selector", "closure", "partial apply",
                                                     "protocol witness", "thunk"))][:24]:
    print(f"| `{name[:110]}` | {solo.get(name, 0):,.0f} | {node.get(name, 0):,.0f} | "
          f"{node.get(name, 0) - solo.get(name, 0):+,.0f} |")
EOF
cat "$report"
echo "wrote $report and $results" >&2
