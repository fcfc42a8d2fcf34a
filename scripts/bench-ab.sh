#!/usr/bin/env bash
# Two hearthd binaries side by side (a change's before and after): interleaved rounds of
# `hearth-bench lean` against each, 50 connections unpipelined and one connection with a window
# of 2,000, fsync never (or `--fsync always`), fresh data directories; the rates and the server's
# CPU time per write. Writes
# `<out>/ab-<UTC time>.jsonl` and `.md` (medians of the rounds). Build the "before" binary from
# its commit first, for example:
#   git checkout <commit> && swift build -c release --product hearthd --scratch-path .build-base
#   cp .build-base/release/hearthd /tmp/hearthd-before && git checkout main
#
# Usage: scripts/bench-ab.sh BEFORE_HEARTHD AFTER_HEARTHD [--rounds N] [--out DIR] [--fsync never|always]
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
ab_arguments "usage: scripts/bench-ab.sh BEFORE_HEARTHD AFTER_HEARTHD [--rounds N] [--out DIR] [--fsync never|always]" \
    never "$@"
swift build -c release --product hearth-bench >&2
choose_allocator
bench_files ab
stop_server_on_exit
echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/hearth.json"

# Each scenario runs both binaries back to back, the first in odd rounds going second in even
# ones: on this shared machine the second of two runs is often the slower, whichever it is.
for round in $(seq "$rounds"); do
    sides="before after"
    [ $((round % 2)) = 0 ] && sides="after before"
    for scenario in "50 1 200000" "1 2000 400000"; do
        read -r connections window count <<<"$scenario"
        for side in $sides; do
            binary=$before
            [ "$side" = after ] && binary=$after
            rm -rf "$work/data"
            start_hearthd "$binary"
            load=(--port "$port" --connections "$connections" --window "$window")
            $scratch/release/hearth-bench lean "${load[@]}" --count 20000 >/dev/null 2>&1
            cpu_before=$(cpu_ticks "$server_pid")
            line=$($scratch/release/hearth-bench lean "${load[@]}" --count "$count" --seconds 60 2>/dev/null | tail -1)
            cpu=$(python3 -c "print(round(($(cpu_ticks "$server_pid") - $cpu_before) / $(getconf CLK_TCK) * 1e6 / $count, 2))")
            echo "{\"side\":\"$side\",\"round\":$round,\"serverCPUMicrosPerWrite\":$cpu,${line#\{}" |
                tee -a "$results" >&2
            stop_pid "$server_pid"
            server_pid=""
        done
    done
done

python3 - "$results" "$before" "$after" "$fsync" "$hearthd_allocator" >"$report" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"# Before and after, {len(rows) // 4} interleaved rounds (medians, writes/s, lean generator, fsync {sys.argv[4]})\n")
print(f"- before: `{sys.argv[2]}`\n- after: `{sys.argv[3]}`\n- allocator: {sys.argv[5]}\n")
def table(measure, form):
    print("| scenario | before | after | after ÷ before |\n|---|---|---|---|")
    for connections, window, label in [(50, 1, "writes, 50 connections"), (1, 2000, "pipelined writes, 1 connection")]:
        med = {side: statistics.median(r[measure] for r in rows
                                       if r["side"] == side and r["connections"] == connections and r["window"] == window)
               for side in ("before", "after")}
        print(f"| {label} | {med['before']:{form}} | {med['after']:{form}} | {med['after'] / med['before']:.2f} |")
table("opsPerSecond", ",.0f")
print("\nThe server's CPU time (user + system) per write, µs (medians; less disturbed by the neighbours")
print("than the rates):\n")
table("serverCPUMicrosPerWrite", ".2f")
EOF
cat "$report"
echo "wrote $report and $results" >&2
