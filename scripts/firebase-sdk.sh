#!/usr/bin/env bash
# Runs the real, unmodified Firebase JS SDK against hearthd (docs/firebase-sdk.md): starts a
# hearthd of its own (free HTTP port, temporary data directory, the rules of
# scripts/firebase-sdk/rules.json, default database "demo", an admin secret of its own), runs every
# driver of scripts/firebase-sdk/ against it, stops it by pid; runs the Node drivers again against a
# hearthd with TLS (a self-signed certificate; https:// and wss:// databaseURLs); and prints a table
# of the scenarios' verdicts.
#
#   scripts/firebase-sdk.sh [--build] [--scratch-path DIR] [--drivers compat,modular,chromium]
#                           [--only SCENARIO,...] [--logs DIR] [--sdk-log] [--no-tls]
#   scripts/firebase-sdk.sh --install-sdk GIT_DIR [COMMIT]
#
#   --build            `swift build --product hearthd` first (with --scratch-path when given)
#   --scratch-path DIR where the build is (default .build); hearthd is DIR/debug/hearthd
#   --drivers LIST     which drivers run (default all three)
#   --only LIST        which scenarios run (names in scripts/firebase-sdk/scenarios.js and chromium.py)
#   --logs DIR         keep each driver's JSON lines and hearthd's log there (default: a temporary
#                      directory, removed unless something failed)
#   --sdk-log          the SDK's own log lines in the Node drivers' output
#   --no-tls           skip the second pass of the Node drivers against a hearthd with TLS (wss://)
#   --install-sdk      extract the SDK (npm package firebase 11.8.0 and its dependencies) from a git
#                      repository that has them committed under node_modules/ into the SDK folder
#
# The SDK folder is $HEARTH_FIREBASE_SDK, else <checkout>/.firebase-sdk. HEARTH_BIN_DIR names the
# folder of a built hearthd instead of the scratch path. Node 20+ runs the Node drivers; the
# Chromium driver needs Debian's chromium and chromium-driver and the .venv of scripts/python-env.sh.
# Exit status: 0 when no scenario failed, 1 when one did, 2 when something needed is missing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sdk=${HEARTH_FIREBASE_SDK:-$root/.firebase-sdk}
build=false
scratch=$root/.build
drivers=compat,modular,chromium
only=""
logs=""
sdk_log=""
tls=true
usage="usage: $0 [--build] [--scratch-path DIR] [--drivers LIST] [--only LIST] [--logs DIR] [--sdk-log] [--no-tls] | --install-sdk GIT_DIR [COMMIT]"

install_sdk() {
    local git_dir=$1 commit=${2:-160dfcdce9317c96055230025a88b04c7157a84a}
    mkdir -p "$sdk"
    for file in firebase-app-compat.js firebase-database-compat.js; do
        git --git-dir="$git_dir" show "$commit:node_modules/firebase/$file" > "$sdk/$file"
    done
    git --git-dir="$git_dir" archive "$commit" \
        node_modules/@firebase/app node_modules/@firebase/app-compat node_modules/@firebase/database \
        node_modules/@firebase/database-compat node_modules/@firebase/component node_modules/@firebase/logger \
        node_modules/@firebase/util node_modules/faye-websocket node_modules/websocket-driver \
        node_modules/websocket-extensions node_modules/http-parser-js node_modules/safe-buffer node_modules/idb |
        tar -x -C "$sdk"
    sha256sum "$sdk/firebase-app-compat.js" "$sdk/firebase-database-compat.js"
}

while [ $# -gt 0 ]; do
    case $1 in
        --build) build=true ;;
        --scratch-path) scratch=$(cd "${2:?$usage}" 2>/dev/null && pwd || echo "$2"); shift ;;
        --drivers) drivers=${2:?$usage}; shift ;;
        --only) only=${2:?$usage}; shift ;;
        --logs) logs=${2:?$usage}; shift ;;
        --sdk-log) sdk_log=--sdk-log ;;
        --no-tls) tls=false ;;
        --install-sdk) install_sdk "${2:?$usage}" "${3:-}"; exit 0 ;;
        -h|--help) echo "$usage"; exit 0 ;;
        *) echo "$usage" >&2; exit 2 ;;
    esac
    shift
done

if [ ! -e "$sdk/firebase-database-compat.js" ] && [ ! -e "$sdk/node_modules/firebase/firebase-database-compat.js" ]; then
    echo "The Firebase JS SDK is not in $sdk: see docs/firebase-sdk.md (\"Running the real SDK tests\")" >&2
    exit 2
fi
export HEARTH_FIREBASE_SDK=$sdk

if $build; then
    (cd "$root" && nice -n 10 swift build --product hearthd --scratch-path "$scratch")
fi
bin=${HEARTH_BIN_DIR:-$scratch/debug}
hearthd=$bin/hearthd
if [ ! -x "$hearthd" ]; then
    echo "$hearthd is missing: run \`swift build --product hearthd\` (or pass --build, or set HEARTH_BIN_DIR)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/hearth-firebase-sdk.XXXXXX")
[ -n "$logs" ] || logs=$work/logs
mkdir -p "$logs"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
pid=""
stop() {
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    pid=""
}
trap 'stop; rm -rf "$work/data" "$work/data-tls"' EXIT
trap 'exit 130' INT TERM

admin_secret=sdk-$(python3 -c 'import secrets; print(secrets.token_hex(16))')
# start NAME [ENV=VALUE...]: a hearthd on free ports, its data in $work/NAME, its log in
# $logs/hearthd-NAME.log.
start() {
    local name=$1; shift
    http_port=$(free_port)
    tcp_port=$(free_port)
    env "$@" HEARTH_ADMIN_SECRET="$admin_secret" HEARTH_DEFAULT_DATABASE=demo "$hearthd" --port "$tcp_port" \
        --http-port "$http_port" --data-dir "$work/$name" --fsync always \
        --rules-file "$root/scripts/firebase-sdk/rules.json" 2> "$logs/hearthd-$name.log" &
    pid=$!
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$http_port") 2>/dev/null && break
        kill -0 "$pid" 2>/dev/null || { cat "$logs/hearthd-$name.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "hearthd (pid $pid) on HTTP port $http_port, line protocol $tcp_port; logs in $logs" >&2
}
run_driver() {
    local name=$1; shift
    echo "---- $name" >&2
    "$@" 2> "$logs/$name.stderr" | tee "$logs/$name.jsonl" || true
}

start data
common=(--port "$http_port" --tcp-port "$tcp_port" --ns demo --rules --admin-secret "$admin_secret" --hearthd "$hearthd")
[ -z "$only" ] || common+=(--only "$only")
columns=""
for driver in ${drivers//,/ }; do
    case $driver in
        compat) run_driver compat node --experimental-websocket "$root/scripts/firebase-sdk/compat-node.js" "${common[@]}" $sdk_log ;;
        modular) run_driver modular env NODE_PATH="$sdk/node_modules" node "$root/scripts/firebase-sdk/modular-node.js" "${common[@]}" $sdk_log ;;
        chromium)
            if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
                echo '{"d":"chromium","s":"all","verdict":"SKIP","detail":"chromium and chromium-driver are not installed"}' | tee "$logs/chromium.jsonl"
            else
                python=$("$root/scripts/python-env.sh")
                run_driver chromium "$python" "$root/scripts/firebase-sdk/chromium.py" "${common[@]}"
            fi ;;
        *) echo "unknown driver $driver (compat, modular, chromium)" >&2; exit 2 ;;
    esac
    columns="$columns $driver"
done
stop

# The Node drivers again over TLS (https:// and wss:// databaseURLs, no emulator mode), against a
# hearthd with a self-signed certificate for 127.0.0.1 that Node is told to trust.
if $tls && command -v openssl > /dev/null; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
        -addext subjectAltName=IP:127.0.0.1 -days 1 -keyout "$work/key.pem" -out "$work/cert.pem" 2> /dev/null
    start data-tls HEARTH_TLS_CERTIFICATE="$work/cert.pem" HEARTH_TLS_KEY="$work/key.pem"
    tls_only=${only:-read-once,dinosaur-facts,value-child-events,queries-vectors,events-vectors,push-lists,update-fan-out,server-values,transactions,presence,rules-denied,rules-revoked,large-value,ws-url}
    tls_common=(--port "$http_port" --ns demo --rules --admin-secret "$admin_secret" --tls --only "$tls_only")
    for driver in ${drivers//,/ }; do
        case $driver in
            compat) run_driver compat-tls env NODE_EXTRA_CA_CERTS="$work/cert.pem" node --experimental-websocket \
                "$root/scripts/firebase-sdk/compat-node.js" "${tls_common[@]}" $sdk_log; columns="$columns compat-tls" ;;
            modular) run_driver modular-tls env NODE_EXTRA_CA_CERTS="$work/cert.pem" NODE_PATH="$sdk/node_modules" node \
                "$root/scripts/firebase-sdk/modular-node.js" "${tls_common[@]}" $sdk_log; columns="$columns modular-tls" ;;
        esac
    done
    stop
fi

set +e
python3 - "$logs" $columns <<'PY'
import json, os, sys
logs, drivers = sys.argv[1], sys.argv[2:]
verdicts, order = {}, []
for driver in drivers:
    path = os.path.join(logs, driver + ".jsonl")
    if not os.path.exists(path):
        continue
    for text in open(path, encoding="utf-8"):
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if "verdict" in line:
            if line["s"] not in order:
                order.append(line["s"])
            verdicts[(line["s"], driver)] = line
width = max([len(s) for s in order] + [8]) + 2
print()
print("scenario".ljust(width) + "".join(d.ljust(13) for d in drivers))
failed = False
for scenario in order:
    cells = []
    for driver in drivers:
        verdict = verdicts.get((scenario, driver), {}).get("verdict", "-")
        failed |= verdict == "FAIL"
        cells.append(verdict.ljust(13))
    print(scenario.ljust(width) + "".join(cells))
for (scenario, driver), line in sorted(verdicts.items()):
    if line["verdict"] == "FAIL":
        print("FAIL %s (%s): %s" % (scenario, driver, line.get("detail", "")))
missing = [d for d in drivers if not any(k[1] == d for k in verdicts)]
if missing:
    print("no verdicts from: " + ", ".join(missing) + " (see their .stderr in " + logs + ")")
sys.exit(1 if failed or missing else 0)
PY
status=$?
if [ $status -ne 0 ] && [ "$logs" = "$work/logs" ]; then
    rm -f "$work/key.pem" "$work/cert.pem"
    echo "logs: $logs" >&2
else
    rm -rf "$work"
    [ $status -eq 0 ] || echo "logs: $logs" >&2
fi
exit $status
