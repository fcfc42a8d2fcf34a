#!/usr/bin/env bash
# What the memory attacks of docs/security.md cost two hearthd builds (a change's before and
# after), in one run: for each attack (scripts/python/attack_rss.py: pipelined reads of a 10 MB
# value over HTTP and over the line protocol, 100 unauthenticated 16 MiB bodies against a server
# with rules, 40 event streams that never read), a fresh server of each build on loopback with
# default settings, its resident memory sampled from /proc during the attack (stopped early past
# 4 GB), then stopped by its pid. Writes `<out>/attacks-<UTC time>.jsonl` and `.md`.
#
# Usage: scripts/bench-attacks.sh BEFORE_HEARTHD AFTER_HEARTHD [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
ab_arguments "usage: scripts/bench-attacks.sh BEFORE_HEARTHD AFTER_HEARTHD [--out DIR]" never "$@"
choose_allocator
bench_files attacks
stop_server_on_exit
echo '{}' >"$work/open.json"
echo '{"rules":{".read":"auth != null",".write":"auth != null"}}' >"$work/rules.json"
echo "{\"rulesFile\":\"$work/rules.json\"}" >"$work/rules-config.json"

for scenario in http-reads tcp-reads bodies streams; do
    config=$work/open.json
    [ "$scenario" = bodies ] && config=$work/rules-config.json
    for side in before after; do
        binary=$before
        [ "$side" = after ] && binary=$after
        rm -rf "$work/data"
        start_hearthd_http "$binary" "$config"
        line=$(timeout 120 python3 scripts/python/attack_rss.py "$scenario" "$server_pid" "$port" "$http_port")
        echo "{\"side\":\"$side\",${line#\{}" | tee -a "$results" >&2
        kill -9 "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=""
    done
done

python3 - "$results" "$before" "$after" "$hearthd_allocator" >"$report" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("# Memory attacks, before and after (resident memory growth at the peak, MB)\n")
print(f"- before: `{sys.argv[2]}`\n- after: `{sys.argv[3]}`\n- allocator: {sys.argv[4]}\n")
print("| attack | before | after | after, answered |\n|---|---|---|---|")
labels = {"http-reads": "200 pipelined GETs of a 10 MB value, never read (HTTP)",
          "tcp-reads": "200 pipelined gets of a 10 MB value, never read (line protocol)",
          "bodies": "100 connections, 16 MiB bodies without a credential (rules on)",
          "streams": "40 event streams that never read, 64 KB changes for 10 s"}
for scenario, label in labels.items():
    side = {r["side"]: r for r in rows if r["scenario"] == scenario}
    def growth(r):
        return f"{r['growthMB']:,}" + (" (stopped at the 4 GB ceiling)" if r["stoppedAtCeiling"] else "")
    after = side["after"]
    note = ""
    if after.get("answered") is not None:
        note = f"{after['answered']} of 100 refused, the slowest in {after['slowestAnswerSeconds']} s"
    print(f"| {label} | {growth(side['before'])} | {growth(after)} | {note} |")
EOF
cat "$report"
echo "wrote $report and $results" >&2
