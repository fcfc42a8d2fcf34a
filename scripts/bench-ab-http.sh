#!/usr/bin/env bash
# Two hearthd binaries side by side on the HTTP API (a change's before and after): interleaved
# rounds of REST writes from 50 keep-alive connections (`hearth-bench writes --target http`) and
# of fan-out from one line-protocol writer to 100 event streams (`hearth-bench fanout --target
# http`), fsync never, fresh data directories; the medians of the rounds. Writes
# `<out>/ab-http-<UTC time>.jsonl` and `.md`. Build the "before" binary as for scripts/bench-ab.sh.
#
# Usage: scripts/bench-ab-http.sh BEFORE_HEARTHD AFTER_HEARTHD [--rounds N] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
ab_arguments "usage: scripts/bench-ab-http.sh BEFORE_HEARTHD AFTER_HEARTHD [--rounds N] [--out DIR]" never "$@"
swift build -c release --product hearth-bench >&2
choose_allocator
bench_files ab-http
stop_server_on_exit
echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/hearth.json"

for round in $(seq "$rounds"); do
    sides="before after"
    [ $((round % 2)) = 0 ] && sides="after before"
    for scenario in writes fanout; do
        for side in $sides; do
            binary=$before
            [ "$side" = after ] && binary=$after
            rm -rf "$work/data"
            start_hearthd_http "$binary"
            if [ "$scenario" = writes ]; then
                load=(writes --connections 50 --count 200000 --seconds 20)
            else
                load=(fanout --subscribers 100 --writes 20000 --seconds 30 --writer-port "$port")
            fi
            line=$($scratch/release/hearth-bench "${load[@]}" --target http --port "$http_port" 2>/dev/null | tail -1)
            echo "{\"side\":\"$side\",\"round\":$round,${line#\{}" | tee -a "$results" >&2
            stop_pid "$server_pid"
            server_pid=""
        done
    done
done

python3 - "$results" "$before" "$after" "$hearthd_allocator" >"$report" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"# HTTP API before and after, {len(rows) // 4} interleaved rounds (medians, fsync never)\n")
print(f"- before: `{sys.argv[2]}`\n- after: `{sys.argv[3]}`\n- allocator: {sys.argv[4]}\n")
print("| scenario | before | after | after ÷ before |\n|---|---|---|---|")
for scenario, measure, label in [("writes", "opsPerSecond", "REST writes/s, 50 connections"),
                                  ("fanout", "eventsPerSecond", "events/s to 100 event streams")]:
    med = {side: statistics.median(r[measure] for r in rows if r["side"] == side and r["scenario"] == scenario)
           for side in ("before", "after")}
    print(f"| {label} | {med['before']:,.0f} | {med['after']:,.0f} | {med['after'] / med['before']:.2f} |")
EOF
cat "$report"
echo "wrote $report and $results" >&2
