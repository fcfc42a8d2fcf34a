#!/usr/bin/env bash
# What security costs, measured end to end in one run (BENCHMARKS.md, "Security"):
#   1. writes with the blog app's rules (scripts/bench-rules/blog.json, ~120 rule nodes) against
#      the same server open, 50 connections unpipelined and 1 connection pipelined;
#   2. a write to a location watched by 10,000 subscriptions whose .read rule looks at root data,
#      against the same fan-out under a rule that does not;
#   3. writes over TLS against plain TCP, and new connections per second with and without TLS.
# Each pair runs interleaved (A, B, A, B, A, B) on freshly started servers; the medians go into
# a Markdown table. Builds hearthd, hearth and hearth-bench in release mode; makes a throwaway CA
# and server certificate with openssl; mints an HS256 token with `hearth token`. Every server is
# on loopback, every scenario bounded in count and time, every process stopped by its pid.
#
# Usage: scripts/bench-security.sh [--quick] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/bench-common.sh
bench_options scripts/bench-security.sh "$@"
rounds=3

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

swift build -c release --product hearthd >&2
swift build -c release --product hearth-bench >&2
swift build -c release --product hearth >&2
choose_allocator
bin=$scratch/release

bench_files security
server_pid=""
stop_server() {
    stop_pid "$server_pid"
    server_pid=""
}
trap 'stop_server; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# Secrets for this run only, passed through the environment, never on a command line.
export HEARTH_JWT_SECRET="bench-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export HEARTH_ADMIN_SECRET="admin-$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
token=$("$bin/hearth" token --uid bench --claims '{"role":"bench"}' --ttl 2h)

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$work/ca.key" -out "$work/ca.crt" -days 1 \
    -subj /CN=bench-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$work/server.key" -out "$work/server.csr" -subj /CN=localhost 2>/dev/null
echo "subjectAltName=DNS:localhost,IP:127.0.0.1" >"$work/san.ext"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
    -out "$work/server.crt" -days 1 -extfile "$work/san.ext" 2>/dev/null

port=""
# The per-connection write rate limit is off (these scenarios measure throughput); TLS needs its
# own configuration file, which also turns it off.
echo '{"maxWritesPerSecondPerConnection": 0}' >"$work/base.json"

start_server() { # extra hearthd flags (a --config replaces base.json)...
    stop_server
    local config=(--config "$work/base.json")
    case " $* " in *" --config "*) config=() ;; esac
    rm -rf "$work/data"
    port=$(free_port)
    "${hearthd_env[@]}" "$bin/hearthd" --port "$port" --data-dir "$work/data" --fsync never --log-level error "${config[@]}" "$@" &
    server_pid=$!
    wait_for_port "$port" hearthd
}

run() { # label, then hearth-bench arguments (the port is added)
    local label=$1
    shift
    "$bin/hearth-bench" "$@" --port "$port" | tail -n 1 | python3 -c '
import json, sys
line = json.loads(sys.stdin.read())
line["label"] = sys.argv[1]
print(json.dumps(line))' "$label" | tee -a "$results"
}

tls_config() {
    cat >"$work/tls.json" <<EOF
{"tlsCertificate": "$work/server.crt", "tlsKey": "$work/server.key", "maxWritesPerSecondPerConnection": 0}
EOF
    echo "$work/tls.json"
}

seed_member() { # the uid the token names is a member, so the guarded read rule allows it
    printf '{"op":"auth","token":"%s"}\n{"op":"set","path":"/members/bench","value":true}\n' "$HEARTH_ADMIN_SECRET" |
        timeout 5 python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read())
f = s.makefile("rb")
for _ in range(3): f.readline()' "$port"
}

writes=$(scale 200000)
pipelined=$(scale 400000)
fan_writes=$(scale 200)
handshakes=$(scale 5000)
subscribes=$(scale 10000)
for round in $(seq $rounds); do
    echo "==> round $round of $rounds" >&2
    start_server
    HEARTH_TOKEN=$token run "writes open" writes --connections 50 --count "$writes" --seconds 20
    HEARTH_TOKEN=$token run "pipelined open" pipelined --count "$pipelined" --seconds 20
    start_server --rules-file scripts/bench-rules/blog.json
    HEARTH_TOKEN=$token run "writes blog rules" writes --connections 50 --count "$writes" --seconds 20
    HEARTH_TOKEN=$token run "pipelined blog rules" pipelined --count "$pipelined" --seconds 20

    start_server
    HEARTH_TOKEN=$token run "subscribes open" subscribes --count "$subscribes" --seconds 20
    start_server --rules-file scripts/bench-rules/open.json
    HEARTH_TOKEN=$token run "subscribes, rule without data" subscribes --count "$subscribes" --seconds 20
    HEARTH_TOKEN=$token run "fanout 10k, rule without data" fanout --subscribers 10000 --writes "$fan_writes" --window 20 --seconds 60
    start_server --rules-file scripts/bench-rules/guarded-fanout.json
    seed_member
    HEARTH_TOKEN=$token run "subscribes, rule reading root" subscribes --count "$subscribes" --seconds 20
    HEARTH_TOKEN=$token run "fanout 10k, rule reading root" fanout --subscribers 10000 --writes "$fan_writes" --window 20 --seconds 60

    start_server
    run "writes plain TCP" writes --connections 50 --count "$writes" --seconds 20
    run "handshakes plain TCP" handshakes --count "$handshakes" --seconds 20
    start_server --config "$(tls_config)"
    run "writes TLS" writes --connections 50 --count "$writes" --seconds 20 --tls-ca "$work/ca.crt"
    run "handshakes TLS" handshakes --count "$handshakes" --seconds 20 --tls-ca "$work/ca.crt"
done
stop_server

python3 - "$results" "$report" "$(uname -srm)" "$(nproc)" <<'EOF'
import json, statistics, sys
results, report, system, cores = sys.argv[1:5]
lines = [json.loads(l) for l in open(results)]
def median(label, field):
    values = [l[field] for l in lines if l.get("label") == label and field in l]
    return statistics.median(values) if values else None
pairs = [
    ("writes, 50 connections", "writes open", "writes blog rules", "opsPerSecond", "writes/s"),
    ("writes, 1 connection pipelined", "pipelined open", "pipelined blog rules", "opsPerSecond", "writes/s"),
    ("subscribe, 1 connection", "subscribes open", "subscribes, rule without data", "subscribesPerSecond", "subscriptions/s"),
    ("subscribe, 1 connection", "subscribes open", "subscribes, rule reading root", "subscribesPerSecond", "subscriptions/s"),
    ("fan-out to 10,000 subscriptions", "fanout 10k, rule without data", "fanout 10k, rule reading root", "eventsPerSecond", "events/s"),
    ("writes, 50 connections", "writes plain TCP", "writes TLS", "opsPerSecond", "writes/s"),
    ("new connections", "handshakes plain TCP", "handshakes TLS", "connectionsPerSecond", "connections/s"),
]
with open(report, "w") as f:
    f.write(f"# Security costs ({system}, {cores} cores), medians of the rounds\n\n")
    f.write("| measure | baseline | with | ratio |\n|---|---|---|---|\n")
    for name, base, other, field, unit in pairs:
        a, b = median(base, field), median(other, field)
        ratio = f"{b / a:.2f}" if a and b else "–"
        fmt = lambda v: "–" if v is None else f"{v:,.0f} {unit}"
        f.write(f"| {name}: {base} → {other} | {fmt(a)} | {fmt(b)} | {ratio} |\n")
    for name, base, other, field, _ in pairs[:2]:
        a, b = median(base, field), median(other, field)
        if a and b:
            f.write(f"\n{name}: the rules add {1e6 / b - 1e6 / a:.2f} µs of wall time per write.\n")
print(open(report).read())
EOF
echo "wrote $report and $results" >&2
