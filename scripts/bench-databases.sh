#!/usr/bin/env bash
# Several databases in one daemon (BENCHMARKS.md, "Several databases"), three parts:
#  1. `hearth-bench databases`: pipelined writes (lean generator, window 2,000, fsync never) to
#     one database, to two databases at once and to one database from two connections, in
#     interleaved rounds, with the server's threads' time on a core; with the default engine
#     threads and with `engineThreads: 1` (both databases on one thread), each also under rules
#     that make the engine's thread the busiest, taking turns.
#  2. `hearth-bench idle-databases`: a data directory of 1,000 databases of 1,000 leaves (filled
#     through the line protocol) against an empty one, a fresh server per round: start-up time,
#     resident memory, and the latency of the first request to a closed database.
#  3. With --before: one database's write rates on that hearthd binary and on this build, fresh
#     servers, interleaved rounds (`hearth-bench pipelined`, and the lean generator pipelined and
#     at 50 connections), with the server's CPU time per write.
# Every load is bounded in count and time; every server is on loopback and stopped by its pid.
# Servers run with the HTTP listener off: only the line protocol is measured.
# Writes `<out>/databases-<UTC time>.jsonl` and `.md`.
#
# Usage: scripts/bench-databases.sh [--quick] [--rounds N] [--before HEARTHD] [--parts LIST] [--out DIR]
#   --quick    counts divided by 10 (100 idle databases)
#   --rounds   rounds of each part (default 4: each side goes first equally often)
#   --before   a hearthd binary built at an earlier commit, for part 3
#   --parts    the parts to run, e.g. 1,3 (default 1,2,3)
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
usage="usage: scripts/bench-databases.sh [--quick] [--rounds N] [--before HEARTHD] [--parts LIST] [--out DIR]"
quick=false
rounds=4
before=""
parts=1,2,3
out=bench-results
while [ $# -gt 0 ]; do
    case $1 in
        --quick) quick=true; shift ;;
        --rounds | --before | --parts | --out) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; printf -v "${1#--}" '%s' "$2"; shift 2 ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
done
[ -z "$before" ] || [ -x "$before" ] || { echo "--before: $before is not an executable" >&2; exit 2; }
command_line="scripts/bench-databases.sh$(if $quick; then echo " --quick"; fi) --rounds $rounds$(if [ -n "$before" ] && part 3; then echo " --before $before"; fi) --parts $parts"
part() { [[ ",$parts," == *",$1,"* ]]; }

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
hearthd=""
build_release
choose_allocator
bench_files databases
bench=$scratch/release/hearth-bench
fsync=never
server_pid=""
# The idle-databases scenario starts its own servers and keeps the running one's pid here.
child_pid_file=""
cleanup() {
    stop_pid "$server_pid"
    if [ -n "$child_pid_file" ] && [ -s "$child_pid_file" ]; then kill "$(cat "$child_pid_file")" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
child_pid_file=$work/idle-server.pid

record() { # label, then a JSON line on stdin: appends it with its label
    sed "s|^{|{\"label\":\"$1\",|" | tee -a "$results"
}

# Part 1: two databases written at once against one, with the default engine threads and with
# one, plain and under rules whose checks make the engine's thread the busiest (the rules file
# below: a regular expression and string functions per write). The settings take turns, a fresh
# server each time, which runs two rounds of the scenario (its loads in both orders).
cat >"$work/rules.json" <<'EOF'
{
  "rules": {
    "bench": {
      "db": {
        "$c": {
          ".read": true,
          ".write": "$c.beginsWith('c') && newData.isString() && newData.val().length <= 16",
          ".validate": "newData.val().matches(/^x+$/) && !newData.val().contains('y') && newData.val().toUpperCase() == 'XXX'"
        }
      }
    }
  }
}
EOF
if part 1; then
    for turn in $(seq $(((rounds + 1) / 2))); do
        settings="default 1 rules:default rules:1"
        [ $((turn % 2)) = 0 ] && settings="rules:1 rules:default 1 default"
        for setting in $settings; do
            engine_threads=${setting#rules:}
            label="engineThreads $engine_threads"
            extra=""
            count=$(scale 1000000)
            [ "$engine_threads" = default ] || extra=", \"engineThreads\": $engine_threads"
            if [ "$setting" != "$engine_threads" ]; then
                label="rules, $label"
                extra="$extra, \"rulesFile\": \"$work/rules.json\""
                count=$(scale 200000)
            fi
            echo "{\"httpPort\": \"off\", \"maxWritesPerSecondPerConnection\": 0, \"autoCreateDatabases\": true$extra}" \
                >"$work/hearth.json"
            rm -rf "$work/data"
            start_hearthd "$hearthd"
            echo "==> two databases against one, $label" >&2
            "$bench" databases --port "$port" --server-pid "$server_pid" --rounds 2 --count "$count" \
                --seconds 60 | record "$label" || echo "==> databases FAILED" >&2
            stop_pid "$server_pid"
            server_pid=""
        done
    done
fi

# Part 2: many idle databases against none.
full_bytes=0
if part 2; then
    echo '{"httpPort": "off", "maxWritesPerSecondPerConnection": 0, "autoCreateDatabases": true, "idleDatabaseSeconds": 2}' >"$work/idle.json"
    idle_databases=$(scale 1000)
    probes=50
    $quick && probes=10
    echo "==> $idle_databases idle databases against none" >&2
    "$bench" idle-databases --port "$(free_port)" --data-dir "$work/full" --empty-data-dir "$work/empty" \
        --databases "$idle_databases" --nodes 1000 --probes "$probes" --rounds "$rounds" --seconds 900 \
        --pid-file "$child_pid_file" -- "${hearthd_env[@]}" "$hearthd" --fsync never --log-level warning \
        --config "$work/idle.json" | record "$idle_databases idle databases" || echo "==> idle-databases FAILED" >&2
    full_bytes=$(du -sb "$work/full" | cut -f1)
    rm -rf "$work/full" "$work/empty"
fi

# Part 3: one database, the earlier build against this one.
if [ -n "$before" ] && part 3; then
    echo '{"httpPort": "off", "maxWritesPerSecondPerConnection": 0}' >"$work/hearth.json"
    for round in $(seq "$rounds"); do
        sides="before after"
        [ $((round % 2)) = 0 ] && sides="after before"
        for scenario in pipelined lean-pipelined lean-50; do
            for side in $sides; do
                binary=$hearthd
                [ "$side" = before ] && binary=$before
                rm -rf "$work/data"
                start_hearthd "$binary"
                "$bench" lean --port "$port" --connections 1 --window 2000 --count 20000 >/dev/null 2>&1
                case $scenario in
                    pipelined) load=(pipelined --count "$(scale 500000)"); count=$(scale 500000) ;;
                    lean-pipelined) load=(lean --connections 1 --window 2000 --count "$(scale 1000000)"); count=$(scale 1000000) ;;
                    lean-50) load=(lean --connections 50 --count "$(scale 200000)"); count=$(scale 200000) ;;
                esac
                cpu_before=$(cpu_ticks "$server_pid")
                line=$("$bench" "${load[@]}" --port "$port" --seconds 60 2>/dev/null | tail -1)
                cpu=$(python3 -c "print(round(($(cpu_ticks "$server_pid") - $cpu_before) / $(getconf CLK_TCK) * 1e6 / $count, 2))")
                echo "{\"side\":\"$side\",\"round\":$round,\"load\":\"$scenario\",\"serverCPUMicrosPerWrite\":$cpu,${line#\{}" |
                    record "one database, before and after"
                stop_pid "$server_pid"
                server_pid=""
            done
        done
    done
fi

python3 - "$results" "$command_line" "$hearthd_allocator" "$hearthd" "$before" "$full_bytes" >"$report" <<'PY'
import datetime, json, os, platform, statistics, sys

results, command, allocator, after_binary, before_binary, full_bytes = sys.argv[1:7]
lines = [json.loads(l) for l in open(results) if l.strip()]
def num(v, digits=0):
    return f"{v:,.{digits}f}"
out = [f"# Several databases in one daemon, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC", ""]
out.append(f"- Command: `{command}`")
out.append(f"- Machine: {os.cpu_count()} cores, {platform.system()} {platform.release()} {platform.machine()}; "
           f"load average at the end {os.getloadavg()[0]:.2f} (other builds may share the machine)")
out.append(f"- hearthd: `{after_binary}`, allocator: {allocator}; fsync never")
out.append("")

parts = [l for l in lines if l.get("scenario") == "databases"]
if parts:
    out.append("## Two databases written at once against one (lean generator, window 2,000)")
    out.append("")
    out.append("Each setting's servers took turns, a fresh server each time running two rounds; medians over all "
               "rounds (rates) and over the servers (the rest). `ran` is a thread's time on a core as a share of the "
               "wall time (1 = a whole core), `waited` its time runnable but waiting for one; cores busy counts the "
               "server and the generator together.")
    out.append("")
    out.append("| setting | load | writes/s | min–max of the rounds | server µs/write | generator µs/write | cores busy | threads: ran / waited |")
    out.append("|---|---|---|---|---|---|---|---|")
    names = {"one": "one database, 1 connection", "two": "two databases, 1 connection each",
             "oneDatabaseTwoConnections": "one database, 2 connections"}
    med = statistics.median
    order = ["engineThreads default", "engineThreads 1", "rules, engineThreads default", "rules, engineThreads 1"]
    for label in sorted({r["label"] for r in parts}, key=lambda l: (order.index(l) if l in order else len(order), l)):
        runs = [r for r in parts if r["label"] == label]
        rates = {}
        for key, name in names.items():
            ds = [r[key] for r in runs if key in r]
            if not ds:
                continue
            all_rates = [x for d in ds for x in d["roundsOpsPerSecond"]]
            rates[key] = med(all_rates)
            thread_names = sorted({t["thread"] for d in ds for t in d.get("threads", [])})
            threads = []
            for t in thread_names:
                ran = [x["ran"] for d in ds for x in d.get("threads", []) if x["thread"] == t]
                waited = [x["waitedForCore"] for d in ds for x in d.get("threads", []) if x["thread"] == t]
                threads.append((med(ran), t, med(waited)))
            threads.sort(reverse=True)
            text = ", ".join(f"{t} {r:.2f} / {w:.2f}" for r, t, w in threads)
            server = med(d["serverCPUMicrosPerWrite"] for d in ds) if all("serverCPUMicrosPerWrite" in d for d in ds) else "—"
            busy = med(d["coresBusy"] for d in ds) if all("coresBusy" in d for d in ds) else "—"
            out.append(f"| {label} | {name} | {num(rates[key])} | {num(min(all_rates))}–{num(max(all_rates))} "
                       f"| {server if server == '—' else f'{server:.2f}'} | {med(d['generatorCPUMicrosPerWrite'] for d in ds):.3f} "
                       f"| {busy if busy == '—' else f'{busy:.2f}'} | {text} |")
        if "one" in rates and "two" in rates:
            per_server = " ".join(f"{r['twoOverOne']:.2f}" for r in runs if "twoOverOne" in r)
            same = f"{rates['oneDatabaseTwoConnections'] / rates['one']:.2f}" if "oneDatabaseTwoConnections" in rates else "—"
            out.append(f"| {label} | **two ÷ one** | **{rates['two'] / rates['one']:.2f}** | each server: {per_server} "
                       f"| two connections to one database ÷ one: {same} | | | |")
    out.append("")

idle = [l for l in lines if l.get("scenario") == "idle-databases"]
for r in idle:
    out.append(f"## {r['databases']:,} idle databases of {r['nodes']:,} leaves against an empty data directory")
    out.append("")
    out.append(f"{r['rounds']} rounds, a fresh server each; medians. The full data directory held "
               f"{int(full_bytes) / 1048576:,.1f} MiB on disk" + (f", filled in {r['fillSeconds']:.1f} s" if 'fillSeconds' in r else "") + ".")
    out.append("")
    out.append("| measure | empty | 1,000 databases | difference | target |".replace("1,000", f"{r['databases']:,}"))
    out.append("|---|---|---|---|---|")
    extra_ms, extra_mb = r["startupMsExtra"], r["rssMiBExtra"]
    out.append(f"| start-up to the first hello (ms) | {r['startupMsEmpty']:.1f} | {r['startupMsFull']:.1f} | {extra_ms:+.1f} "
               f"| ≤ 2,000 ms {'✅' if r['startupMsFull'] <= 2000 else '❌ missed'} |")
    out.append(f"| resident memory after start (MiB) | {r['rssMiBEmpty']:.1f} | {r['rssMiBFull']:.1f} | {extra_mb:+.1f} "
               f"| ≤ +100 MB {'✅' if extra_mb * 1.048576 <= 100 else '❌ missed'} |")
    out.append("")
    f, u = r["firstRequest"], r["useAnswer"]
    out.append(f"First request to a closed database ({r['probes']} probes, each a different database; `use` and a "
               f"`get` sent together on a new connection): p50 {f['p50Ms']} ms, p99 {f['p99Ms']} ms, max {f['maxMs']} ms "
               f"(target ≤ 50 ms {'✅' if f['p99Ms'] <= 50 else '❌ missed'}); the `use` answer alone p50 {u['p50Ms']} ms, "
               f"p99 {u['p99Ms']} ms. Resident memory after each round's probes: "
               f"{', '.join(str(x) for x in r['rssMiBAfterProbes'])} MiB.")
    out.append("")

ab = [l for l in lines if "side" in l]
if ab:
    out.append("## One database: the earlier build against this one (fresh servers, interleaved rounds, medians)")
    out.append("")
    out.append(f"- before: `{before_binary}`\n- after: `{after_binary}`")
    out.append("")
    out.append("| load | before writes/s | after writes/s | after ÷ before | rounds after ÷ before | before µs/write | after µs/write |")
    out.append("|---|---|---|---|---|---|---|")
    labels = {"pipelined": "`hearth-bench pipelined` (1 connection, window 2,000)",
              "lean-pipelined": "lean, 1 connection, window 2,000", "lean-50": "lean, 50 connections"}
    for load, name in labels.items():
        rows = [l for l in ab if l["load"] == load]
        if not rows:
            continue
        med = lambda side, key: statistics.median(l[key] for l in rows if l["side"] == side)
        b, a = med("before", "opsPerSecond"), med("after", "opsPerSecond")
        per_round = []
        for rnd in sorted({l["round"] for l in rows}):
            pair = {l["side"]: l["opsPerSecond"] for l in rows if l["round"] == rnd}
            if "before" in pair and "after" in pair:
                per_round.append(f"{pair['after'] / pair['before']:.2f}")
        out.append(f"| {name} | {num(b)} | {num(a)} | {a / b:.2f} | {' '.join(per_round)} "
                   f"| {med('before', 'serverCPUMicrosPerWrite'):.2f} | {med('after', 'serverCPUMicrosPerWrite'):.2f} |")
    out.append("")

out.append("## JSON lines")
out.append("")
out.append("```json")
out.extend(json.dumps(l, separators=(",", ":"), ensure_ascii=False) for l in lines)
out.append("```")
print("\n".join(out))
PY
echo >&2
cat "$report"
echo "==> $report and $results" >&2
