# Shared by scripts/bench*.sh (sourced, not run): options, scaling, output files, ports and
# stopping servers. Every server these scripts start is on loopback and stopped by its pid.

# The build folder the scripts build into and run from: `.build`, or HEARTH_SCRATCH_PATH (a
# release build kept apart from a debug one, say). Every `swift build` here goes there.
scratch=${HEARTH_SCRATCH_PATH:-.build}
swift() {
    if [ "${1:-}" = build ]; then
        shift
        command swift build --scratch-path "$scratch" "$@"
    else
        command swift "$@"
    fi
}

# Parses `[--quick] [--out DIR]` into `quick` and `out`; $1 is the script's name for the usage line.
bench_options() {
    local name=$1
    shift
    quick=false
    out=bench-results
    while [ $# -gt 0 ]; do
        case $1 in
            --quick) quick=true ;;
            --out) out=$2; shift ;;
            *) echo "usage: $name [--quick] [--out DIR]" >&2; exit 2 ;;
        esac
        shift
    done
}

# Parses `--name value` options into the variables of the same names, which the caller sets to
# their defaults first; $1 is the usage line, $2 the accepted names (space-separated), then the
# arguments. Example: `out=bench-results; value_options "usage: …" "out rounds" "$@"`.
value_options() {
    local usage=$1 names=" $2 "
    shift 2
    while [ $# -gt 0 ]; do
        local name=${1#--}
        if [ "$name" = "$1" ] || [[ $names != *" $name "* ]] || [ $# -lt 2 ]; then
            echo "$usage" >&2
            exit 2
        fi
        printf -v "$name" '%s' "$2"
        shift 2
    done
}

# Parses the arguments of a side-by-side script, `BEFORE_HEARTHD AFTER_HEARTHD [--rounds N]
# [--out DIR] [--fsync never|always]`, into `before`, `after`, `rounds` (default 3), `out` and
# `fsync` (default $2); $1 is the usage line, then the arguments.
ab_arguments() {
    local usage=$1
    fsync=$2
    shift 2
    [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
    before=$1 after=$2
    shift 2
    rounds=3
    out=bench-results
    value_options "$usage" "rounds out fsync" "$@"
    case $fsync in never | always) ;; *) echo "$usage" >&2 && exit 2 ;; esac
}

# Installs the distribution's package of each missing command, given as `command` or
# `command:package`, and stops any service the package starts: only the servers these scripts
# start are measured.
install_missing() {
    local entry tool package
    for entry in "$@"; do
        tool=${entry%%:*} package=${entry#*:}
        command -v "$tool" >/dev/null && continue
        echo "==> installing $package from the distribution's packages" >&2
        apt-get install -y "$package" >&2 || { apt-get update >&2 && apt-get install -y "$package" >&2; }
        service "$package" stop >/dev/null 2>&1 || true
    done
}

# Builds hearth-bench in release mode, and hearthd too unless `hearthd` already names a binary
# (it then names the one built).
build_release() {
    if [ -z "$hearthd" ]; then
        swift build -c release --product hearthd >&2
        hearthd=$scratch/release/hearthd
    fi
    swift build -c release --product hearth-bench >&2
}

# hearthd runs under jemalloc, as the Docker image runs it (README.md, "Allocator"), installed
# here when missing (Redis 7 from Debian uses it too); HEARTH_BENCH_ALLOCATOR=glibc keeps glibc's
# malloc. Sets `hearthd_allocator` (for the reports) and `hearthd_env`, the prefix of every
# command line that starts hearthd (`env` execs it: the pid started is hearthd's).
choose_allocator() {
    hearthd_allocator="glibc malloc"
    hearthd_env=(env)
    [ "${HEARTH_BENCH_ALLOCATOR:-jemalloc}" = glibc ] && return 0
    if ! compgen -G "/usr/lib/*/libjemalloc.so.2" >/dev/null; then
        echo "==> installing libjemalloc2 from the distribution's packages" >&2
        apt-get install -y libjemalloc2 >&2 || { apt-get update >&2 && apt-get install -y libjemalloc2 >&2; }
    fi
    local library
    library=$(compgen -G "/usr/lib/*/libjemalloc.so.2" | head -n 1)
    hearthd_allocator="jemalloc ($library, preloaded)"
    hearthd_env=(env LD_PRELOAD="$library")
}

# A count, divided by 10 under --quick.
scale() { if $quick; then echo $(($1 / 10)); else echo "$1"; fi; }

# A scratch directory (`work`) and this run's output files `<out>/<prefix>-<UTC time>.jsonl` and
# `.md` (`results`, `report`).
bench_files() { # prefix
    work=$(mktemp -d)
    mkdir -p "$out"
    stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
    results="$out/$1-$stamp.jsonl"
    report="$out/$1-$stamp.md"
    : >"$results"
}

# For scripts that run one server at a time: on exit or interrupt, stops the server whose pid is
# in `server_pid` (when set) and removes `work`.
stop_server_on_exit() {
    server_pid=""
    trap 'stop_pid "$server_pid"; rm -rf "$work"' EXIT
    trap 'exit 130' INT TERM
}

# A process's CPU time (user + system) in clock ticks (`getconf CLK_TCK` per second).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

wait_for_port() { # port, name
    for _ in $(seq 200); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "$2 did not start on port $1" >&2
    exit 1
}

# Starts the hearthd binary $1 under the chosen allocator (`choose_allocator`) on a free loopback
# port with its data in `$work/data`, `fsync` and `$work/hearth.json`; sets `port` and
# `server_pid` once it accepts connections.
start_hearthd() { # binary
    port=$(free_port)
    "${hearthd_env[@]}" "$1" --port "$port" --data-dir "$work/data" --fsync "$fsync" --log-level warning \
        --config "$work/hearth.json" &
    server_pid=$!
    wait_for_port "$port" hearthd
}

# Starts the hearthd binary $1 as `start_hearthd` does, with the HTTP listener on a free port too
# (`http_port`) and the configuration file $2 (default `$work/hearth.json`); sets `port`,
# `http_port` and `server_pid` once the HTTP port accepts connections.
start_hearthd_http() { # binary [config]
    port=$(free_port)
    http_port=$(free_port)
    "${hearthd_env[@]}" "$1" --port "$port" --http-port "$http_port" --data-dir "$work/data" --fsync "$fsync" \
        --log-level warning --config "${2:-$work/hearth.json}" &
    server_pid=$!
    wait_for_port "$http_port" hearthd
}

stop_pid() { # pid (or nothing)
    [ -n "${1:-}" ] || return 0
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# Starts one etcd member (Debian's /usr/bin/etcd) on free loopback ports with its data in
# `$work/etcd`; sets `etcd_port` (its client port) and appends its pid to `pids`.
start_etcd() { # name
    [ -x /usr/bin/etcd ] || { echo "etcd is missing: apt-get install etcd-server" >&2; exit 2; }
    etcd_port=$(free_port)
    local peer
    peer=$(free_port)
    /usr/bin/etcd --name "$1" --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
        --advertise-client-urls "http://127.0.0.1:$etcd_port" --listen-peer-urls "http://127.0.0.1:$peer" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "$1=http://127.0.0.1:$peer" \
        --log-level error >"$work/etcd.log" 2>&1 &
    pids+=($!)
    wait_for_port "$etcd_port" etcd
}

# For scripts that start several processes: on exit or interrupt, stops every pid in `pids` (which
# this sets to empty; append to it) and removes `work`.
stop_pids_on_exit() {
    pids=()
    trap 'for pid in "${pids[@]}"; do stop_pid "$pid"; done; rm -rf "$work"' EXIT
    trap 'exit 130' INT TERM
}

# Prints the port, among the given ones, of the hearthd whose hello says it leads its cluster
# (waits up to 30 s for an election).
leader_port() {
    python3 - "$@" <<'PY'
import json, socket, sys, time
deadline = time.time() + 30
while time.time() < deadline:
    for port in sys.argv[1:]:
        try:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=1) as s:
                if json.loads(s.makefile().readline()).get("cluster", {}).get("role") == "leader":
                    print(port); sys.exit(0)
        except OSError:
            pass
    time.sleep(0.1)
sys.exit("no leader within 30 s")
PY
}
