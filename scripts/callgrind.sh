#!/usr/bin/env bash
# Where the instructions of one write go, in hearthd and in Redis 7, counted by valgrind's
# callgrind (deterministic, unlike wall time on a shared machine). For each scenario it starts the
# server under callgrind with instrumentation off, warms it up, switches instrumentation on, sends
# a fixed number of writes with `hearth-bench lean` (`set` to Hearth, `SET` to Redis) — and for
# fan-out, writes to 100 subscribers with `hearth-bench fanout` (Redis: PUBLISH to SUBSCRIBE) —
# switches it off and stops the server by its pid. It then reports user-space instructions per
# write (per event for fan-out), in all and inclusive of the functions that do each stage (parse,
# apply, log, answer, ...). The kernel's
# share (system calls, TCP) is not counted by callgrind and is the same kind of work in both.
#
# valgrind 3.19 cannot read Swift 6.3's DWARF, so hearthd runs from a copy without debug
# information (symbols come from the symbol table); names are demangled with `swift demangle`.
#
# `--hearthd BINARY` counts a given build (for example a commit's before a change) instead of
# building this tree's. `--profiles DIR` keeps each scenario's callgrind profile and its annotated
# listing (every function's inclusive count, demangled) in DIR, to see where a stage's
# instructions go (`callgrind_annotate --tree=caller` on the profile says who calls what).
#
# Usage: scripts/callgrind.sh [--writes N] [--out DIR] [--hearthd BINARY] [--profiles DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
writes=20000
out=bench-results
hearthd=""
profiles=""
value_options "usage: scripts/callgrind.sh [--writes N] [--out DIR] [--hearthd BINARY] [--profiles DIR]" \
    "writes out hearthd profiles" "$@"
quick=false
install_missing valgrind redis-server
build_release
choose_allocator
bench_files callgrind
stop_server_on_exit
objcopy --strip-debug "$hearthd" "$work/hearthd"
echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/hearth.json"

measure() { # target (hearth | redis), label, connections, window
    local target=$1 label=$2 connections=$3 window=$4
    local port profile="$work/$target-$connections-$window.out"
    port=$(free_port)
    rm -rf "$work/data" && mkdir -p "$work/data"
    local server=("$work/hearthd" --port "$port" --data-dir "$work/data" --fsync never --log-level warning
        --config "$work/hearth.json")
    local launch=("${hearthd_env[@]}")
    [ "$target" = redis ] && server=(redis-server --bind 127.0.0.1 --port "$port" --dir "$work/data" --save ""
        --appendonly no --daemonize no --logfile "$work/data/redis.log") && launch=(env)
    "${launch[@]}" valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$profile" "${server[@]}" \
        2>"$work/valgrind.log" &
    server_pid=$!
    for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    local units=$writes
    if [ "$connections" = fanout ]; then
        # One writer, 100 subscribers of the written path (Redis: of the channel); per event.
        local load=(--target "$target" --port "$port" --subscribers 100 --seconds 600)
        units=$((writes / 10 * 100))
        echo "==> $label ($target): warm-up, then $((writes / 10)) writes to 100 subscribers under callgrind" >&2
        $scratch/release/hearth-bench fanout "${load[@]}" --writes $((writes / 40)) >/dev/null
        callgrind_control -i on "$server_pid" >/dev/null
        $scratch/release/hearth-bench fanout "${load[@]}" --writes $((writes / 10)) >/dev/null
    else
        local load=(--target "$target" --port "$port" --connections "$connections" --window "$window" --seconds 600)
        echo "==> $label ($target): warm-up, then $writes writes under callgrind" >&2
        $scratch/release/hearth-bench lean "${load[@]}" --count $((writes / 10)) >/dev/null
        callgrind_control -i on "$server_pid" >/dev/null
        $scratch/release/hearth-bench lean "${load[@]}" --count "$writes" >/dev/null
    fi
    callgrind_control -i off "$server_pid" >/dev/null
    stop_pid "$server_pid"
    server_pid=""
    callgrind_annotate --inclusive=yes --threshold=100 "$profile" | swift demangle --simplified \
        >"$work/$target-$connections-$window.txt"
    if [ -n "$profiles" ]; then
        mkdir -p "$profiles" && cp "$profile" "$work/$target-$connections-$window.txt" "$profiles/"
    fi
    python3 - "$work/$target-$connections-$window.txt" "$target" "$label" "$units" "$connections" >>"$results" <<'EOF'
import json, re, sys
path, target, label, writes, kind = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
# Stages: the functions whose inclusive counts say what each part of a write costs. A stage
# takes the largest of its alternatives (names from different builds, or a caller and its
# callee); an alternative "f + g" adds the counts of functions called one after the other.
stages = {
    "hearth": [
        ("frame and parse the request", ["RequestDecoder.decode(_:)", "RequestDecoder.decode(_:reusing:)", "RequestDecoder.decode(_:reusing:paths:)"]),
        ("apply to the tree", ["Database.apply(_:now:)", "Database.applyInPlace(_:now:)",
                               "Database.applyInPlace(settingNonEmpty:now:)",
                               "Database.applyInPlace(settingNonEmpty:at:now:)"]),
        ("change log (resume)", ["ChangeLog.record(rev:paths:before:after:)",
                                 "ChangeLog.record(rev:paths:before:after:setsNonEmptyValue:)",
                                 "ChangeLog.keptNodes(ofNonEmptySetAt:in:) + ChangeLog.record(rev:kept:)",
                                 "ChangeLog.record(rev:kept:)"]),
        ("views", ["ViewRegistry.apply(write:paths:before:after:rev:batch:)", "ViewRegistry.watches(_:)",
                   "ViewRegistry.watches<A>(_:)"]),
        ("log: encode and write", ["Storage.append(_:)", "Storage.append(_:deferringSync:)"]),
        ("engine turn (all of the above but parse)", ["Engine.drain()"]),
        ("answer: encode and send", ["ConnectionHandler.flushOutbox(context:)"]),
    ],
    "hearth-fanout": [
        ("raise the events and queue them (engine)", ["ViewRegistry.apply(write:paths:before:after:rev:batch:)"]),
        ("write them into the connections' outboxes", ["ConnectionHandler.receive(_:)"]),
        ("send (flush to the sockets)", ["ConnectionHandler.flushOutbox(context:)"]),
    ],
    "redis-fanout": [
        ("publish to the subscribers", ["publishCommand"]),
        ("send", ["handleClientsWithPendingWritesUsingThreads", "handleClientsWithPendingWrites"]),
    ],
    "redis": [
        ("parse the request", ["processMultibulkBuffer", "processInlineBuffer"]),
        ("apply (SET)", ["setCommand"]),
        ("answer: encode", ["addReply"]),
        ("answer: send", ["handleClientsWithPendingWritesUsingThreads", "handleClientsWithPendingWrites"]),
    ],
}[target + ("-fanout" if kind == "fanout" else "")]
inclusive, total = {}, 0
for line in open(path):
    m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
    if not m:
        continue
    count = int(m.group(1).replace(",", ""))
    name = m.group(2)
    if name.startswith("PROGRAM TOTALS"):
        total = count
        continue
    name = re.sub(r"^\S*?:", "", name, count=1)           # "???:" or "file:"
    name = re.sub(r" \[.*\]$", "", name)                   # " [object]"
    name = re.sub(r"^(specialized |static )+", "", name)   # specialisations count as the function
    name = re.sub(r"'\d+$", "", name)                      # recursion levels
    inclusive[name] = max(inclusive.get(name, 0), count)
unit = "event" if kind == "fanout" else "write"
row = {"label": label, "scenario": "callgrind", "target": target, "writes": writes, "unit": unit,
       "instructionsPerWrite": round(total / writes)}
for stage, names in stages:
    row[stage] = round(max(sum(inclusive.get(f.strip(), 0) for f in n.split(" + ")) for n in names) / writes)
print(json.dumps(row))
EOF
    tail -1 "$results" >&2
}

measure hearth "writes, 50 connections" 50 1
measure redis "writes, 50 connections" 50 1
measure hearth "pipelined writes, 1 connection" 1 2000
measure redis "pipelined writes, 1 connection" 1 2000
measure hearth "fan-out to 100 subscribers (per event)" fanout 0
measure redis "fan-out to 100 subscribers (per event)" fanout 0

python3 - "$results" "$writes" "$hearthd" "$hearthd_allocator" >"$report" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"# callgrind: user-space instructions per write ({sys.argv[2]} writes per scenario)\n")
print(f"hearthd: `{sys.argv[3]}`; allocator: {sys.argv[4]}\n")
print("From `scripts/callgrind.sh`; each stage is the inclusive count of the functions doing it,")
print("so nested stages overlap (the engine turn contains apply, change log, views and log).\n")
for label in dict.fromkeys(r["label"] for r in rows):
    print(f"## {label}\n")
    for r in rows:
        if r["label"] != label:
            continue
        unit = r.get("unit", "write")
        print(f"**{r['target']}**: {r['instructionsPerWrite']:,} instructions per {unit}\n")
        print(f"| stage | instructions per {unit} |\n|---|---|")
        for k, v in r.items():
            if k not in ("label", "scenario", "target", "writes", "unit", "instructionsPerWrite"):
                print(f"| {k} | {v:,} |")
        print()
EOF
cat "$report"
echo "wrote $report and $results" >&2
