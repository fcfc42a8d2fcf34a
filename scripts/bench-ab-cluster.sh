#!/usr/bin/env bash
# Two hearthd binaries side by side as a 2-node cluster under `syncReplicas: 1` (a change's
# before and after): interleaved rounds, each starting a fresh cluster of one binary on a real
# etcd, then `hearth-bench lean` against its leader, 50 connections unpipelined and one
# connection with a window of 2,000; the rates and the leader's and the replica's CPU time per
# write. Writes `<out>/ab-cluster-<UTC time>.jsonl` and `.md` (medians of the rounds). Build the
# "before" binary from its commit first (see scripts/bench-ab.sh).
#
# Usage: scripts/bench-ab-cluster.sh BEFORE_HEARTHD AFTER_HEARTHD [--rounds N] [--out DIR] [--fsync always|never]
# Needs /usr/bin/etcd (Debian's etcd-server). Every process is on loopback and stopped by its pid.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
ab_arguments \
    "usage: scripts/bench-ab-cluster.sh BEFORE_HEARTHD AFTER_HEARTHD [--rounds N] [--out DIR] [--fsync always|never]" \
    always "$@"
swift build -c release --product hearth-bench >&2
choose_allocator
bench_files ab-cluster
stop_pids_on_exit
start_etcd ab

# start_node BINARY CLUSTER NAME: starts one node; sets `port` and `pid`.
start_node() {
    port=$(free_port)
    echo "{\"maxWritesPerSecondPerConnection\":0,\"cluster\":{\"leaseSeconds\":2,\"syncReplicas\":1}}" >"$work/$3.json"
    HEARTH_CLUSTER_SECRET=bench-secret "${hearthd_env[@]}" "$1" --port "$port" --http-port "$(free_port)" --data-dir "$work/$3" \
        --fsync "$fsync" --log-level warning --config "$work/$3.json" --cluster-etcd "http://127.0.0.1:$etcd_port" \
        --cluster-name "$2" --node "$3" 2>>"$work/$3.log" &
    pid=$!
    pids+=("$pid")
    wait_for_port "$port" "hearthd $3"
}

# per_write TICKS COUNT: CPU clock ticks as µs per write.
per_write() { python3 -c "print(round(($1) / $(getconf CLK_TCK) * 1e6 / $2, 2))"; }

# Each side runs first in odd rounds and second in even ones (see scripts/bench-ab.sh).
for round in $(seq "$rounds"); do
    sides="before after"
    [ $((round % 2)) = 0 ] && sides="after before"
    for side in $sides; do
        binary=$before
        [ "$side" = after ] && binary=$after
        cluster="ab-$side-$round"
        start_node "$binary" "$cluster" "$cluster-1"
        first_port=$port first_pid=$pid
        start_node "$binary" "$cluster" "$cluster-2"
        second_port=$port second_pid=$pid
        leader=$(leader_port "$first_port" "$second_port")
        leader_pid=$first_pid replica_pid=$second_pid
        [ "$leader" = "$second_port" ] && leader_pid=$second_pid replica_pid=$first_pid
        sleep 1 # until the replica streams
        for scenario in "50 1 200000" "1 2000 400000"; do
            read -r connections window count <<<"$scenario"
            load=(--port "$leader" --connections "$connections" --window "$window")
            leader_before=$(cpu_ticks "$leader_pid")
            replica_before=$(cpu_ticks "$replica_pid")
            line=$($scratch/release/hearth-bench lean "${load[@]}" --count "$count" --seconds 60 2>/dev/null | tail -1)
            leader_cpu=$(per_write "$(cpu_ticks "$leader_pid") - $leader_before" "$count")
            replica_cpu=$(per_write "$(cpu_ticks "$replica_pid") - $replica_before" "$count")
            echo "{\"side\":\"$side\",\"round\":$round,\"leaderCPUMicrosPerWrite\":$leader_cpu,\"replicaCPUMicrosPerWrite\":$replica_cpu,${line#\{}" |
                tee -a "$results" >&2
        done
        stop_pid "$first_pid"
        stop_pid "$second_pid"
    done
done

python3 - "$results" "$before" "$after" "$fsync" >"$report" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"# A 2-node cluster (syncReplicas 1) before and after, {len(rows) // 4} interleaved rounds "
      f"(medians, lean generator on the leader, fsync {sys.argv[4]})\n")
print(f"- before: `{sys.argv[2]}`\n- after: `{sys.argv[3]}`\n")
print("| scenario | measure | before | after | after ÷ before |\n|---|---|---|---|---|")
for connections, window, label in [(50, 1, "writes, 50 connections"), (1, 2000, "pipelined writes, 1 connection")]:
    for measure, name, form in [("opsPerSecond", "writes/s", ",.0f"),
                                ("leaderCPUMicrosPerWrite", "leader CPU µs per write", ".2f"),
                                ("replicaCPUMicrosPerWrite", "replica CPU µs per write", ".2f")]:
        med = {side: statistics.median(r[measure] for r in rows
                                       if r["side"] == side and r["connections"] == connections and r["window"] == window)
               for side in ("before", "after")}
        print(f"| {label} | {name} | {med['before']:{form}} | {med['after']:{form}} | {med['after'] / med['before']:.2f} |")
EOF
cat "$report"
echo "wrote $report and $results" >&2
