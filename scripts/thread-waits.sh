#!/usr/bin/env bash
# Where hearthd's threads wait under one `hearth-bench lean` load (BENCHMARKS.md, twentieth
# pass). For each thread, from /proc/<pid>/task/<tid>/schedstat around the measured run: the
# time it ran, the time it was runnable but waited for a core, and the rest, asleep, per write
# and as shares of the run. With --perf, also `perf record` of scheduler switches and CPU samples
# (every 50 µs of a thread's CPU, with stacks): how often and how long the engine's thread
# sleeps, and what the connections' thread was doing meanwhile.
# Writes `<out>/thread-waits-<UTC time>.md`.
#
# Usage: scripts/thread-waits.sh [--connections N] [--window N] [--count N] [--fsync never|always]
#                                [--hearthd BINARY] [--perf yes|no] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bench-common.sh
connections=1
window=2000
count=600000
fsync=never
hearthd=""
perf=no
out=bench-results
value_options "usage: scripts/thread-waits.sh [--connections N] [--window N] [--count N] [--fsync never|always] [--hearthd BINARY] [--perf yes|no] [--out DIR]" \
    "connections window count fsync hearthd perf out" "$@"
[ "$perf" = yes ] && install_missing perf:linux-perf
build_release
choose_allocator
bench_files thread-waits
rm -f "$results"
stop_server_on_exit
echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/hearth.json"

start_hearthd "$hearthd"
load=(--port "$port" --connections "$connections" --window "$window")
$scratch/release/hearth-bench lean "${load[@]}" --count 20000 >/dev/null 2>&1  # warm-up

threads() { for task in /proc/"$server_pid"/task/*; do echo "$(basename "$task") $(cat "$task/schedstat") $(tr ' ' _ <"$task/comm")"; done; }
threads >"$work/before"
if [ "$perf" = yes ]; then
    perf record -e sched:sched_switch -e task-clock -c 50000 -g -p "$server_pid" -o "$work/perf.data" \
        -- sleep 600 >/dev/null 2>&1 &
    perf_pid=$!
    sleep 0.5
fi
started=$(date +%s%N)
$scratch/release/hearth-bench lean "${load[@]}" --count "$count" --seconds 60 2>/dev/null | tail -1 >"$work/line"
ended=$(date +%s%N)
threads >"$work/after"
if [ "$perf" = yes ]; then
    kill -INT "$perf_pid" && wait "$perf_pid" || true
    perf script -i "$work/perf.data" >"$work/perf.txt" 2>/dev/null
fi
stop_pid "$server_pid"
server_pid=""

python3 - "$work" "$((ended - started))" "$count" "$hearthd" "$hearthd_allocator" "$fsync" "$perf" >"$report" <<'EOF'
import bisect, collections, json, re, sys
work, wall, count, hearthd, allocator, fsync, perf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:]
line = json.loads(open(f"{work}/line").read())
def load(name):
    return {f[0]: (int(f[1]), int(f[2]), f[4]) for f in (l.split() for l in open(f"{work}/{name}"))}
before, after = load("before"), load("after")
print(f"# Where hearthd's threads wait: {line['connections']} connection(s), window {line['window']}, fsync {fsync}\n")
print(f"hearthd: `{hearthd}`; allocator: {allocator}; {count:,} writes at {line['opsPerSecond']:,.0f}/s. Per thread")
print("(those that ran at least 1 % of the run), from schedstat: ran, runnable but waiting for a core, asleep.\n")
print("| thread | ran, ns per write | waited for a core | asleep | ran | waited | asleep |")
print("|---|---|---|---|---|---|---|")
# The engine's event loop group starts first (HearthServer), so its thread is NIO-ELT-1-#1; the
# connections' loop (one on two cores) is NIO-ELT-2-#1.
names = {}
for tid, (ran, waited, comm) in after.items():
    ran -= before.get(tid, (0, 0, ""))[0]
    waited -= before.get(tid, (0, 0, ""))[1]
    names[comm] = tid
    if ran < wall / 100:
        continue
    asleep = wall - ran - waited
    role = {"NIO-ELT-1-#1": "the engine's", "NIO-ELT-2-#1": "the connections'"}.get(comm, comm)
    print(f"| {role} ({comm}) | {ran / count:,.0f} | {waited / count:,.0f} | {asleep / count:,.0f} "
          f"| {100 * ran / wall:.0f} % | {100 * waited / wall:.0f} % | {100 * asleep / wall:.0f} % |")
if perf != "yes":
    sys.exit(0)
engine, io = names.get("NIO-ELT-1-#1"), names.get("NIO-ELT-2-#1")
events = []
for block in open(f"{work}/perf.txt", errors="replace").read().split("\n\n"):
    lines = block.strip().split("\n")
    m = re.match(r"\s*(.+?)\s+(\d+)\s+(?:\[\d+\]\s+)?([\d.]+):\s+(?:\d+\s+)?(\S+):(.*)", lines[0]) if lines else None
    if not m:
        continue
    _, tid, t, name, rest = m.groups()
    if name.endswith("sched_switch"):
        s = re.search(r"prev_pid=(\d+).*prev_state=(\S+)", rest)
        if s and s.group(2).startswith("S"):
            events.append((float(t), "sleep", s.group(1), None))
    else:
        events.append((float(t), "sample", tid, " ".join(l.strip() for l in lines[1:])))
events.sort(key=lambda e: e[0])
span = events[-1][0] - events[0][0] if events else 0
def sleeps(tid):  # from a switch out asleep to the thread's next CPU sample (within 50 µs of waking)
    found, start = [], None
    for t, kind, who, _ in events:
        if who != tid:
            continue
        if kind == "sleep":
            start = t
        elif start is not None:
            found.append((start, t))
            start = None
    return found
stages = [("EngineC7release", "freeing a turn's requests"), ("UnderlyingTask", "freeing a turn's requests"),
          ("ConnectionHandlerC7receive", "encoding and writing answers"), ("channelRead", "reading and parsing requests"),
          ("readFromSocket", "reading and parsing requests"), ("libjemalloc", "the allocator (freeing, mostly)"),
          ("whenReady", "the event loop"), ("epoll_wait", "the event loop")]
def stage(stack):
    return next((name for key, name in stages if key in stack), "other")
gaps = sleeps(engine)
starts = [a for a, _ in gaps]
during, overall = collections.Counter(), collections.Counter()
for t, kind, who, stack in events:
    if kind != "sample" or who != io:
        continue
    s = stage(stack)
    overall[s] += 1
    i = bisect.bisect_right(starts, t) - 1
    if i >= 0 and gaps[i][0] <= t <= gaps[i][1]:
        during[s] += 1
asleep = sum(b - a for a, b in gaps)
long_gaps = [b - a for a, b in gaps if b - a >= 200e-6]
print(f"\n## The engine's sleeps (perf, {span:.2f} s recorded)\n")
print(f"{len(gaps):,} sleeps, {1e3 * asleep:.1f} ms ({100 * asleep / span:.1f} % of the time); {len(long_gaps):,} of them "
      f"200 µs or longer, {1e3 * sum(long_gaps):.1f} ms together. What the connections' thread was doing meanwhile "
      "(its CPU samples, every 50 µs of its time):\n")
print("| connections' thread | while the engine sleeps | all the time |")
print("|---|---|---|")
for s, n in during.most_common():
    print(f"| {s} | {100 * n / max(1, sum(during.values())):.0f} % | {100 * overall[s] / max(1, sum(overall.values())):.0f} % |")
EOF
cat "$report"
echo "wrote $report" >&2
