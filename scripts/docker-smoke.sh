#!/usr/bin/env bash
# Smoke test of the container image.
#
# With a Docker engine: builds the image, runs it with both ports (9000, 9080) published on random
# loopback ports and the rules mounted read-only, as README.md does, waits until it is healthy,
# asks the HTTP health endpoint, sends a set and a get, replaces the rules (setRules: kept in the
# data volume), restarts the container and finds them in force, stops it with SIGTERM (docker
# stop) and expects exit status 0. Then runs it with TLS on (a throwaway self-signed certificate)
# and waits until the image's own health check finds it healthy.
#
# Without one (`docker info` fails): checks what the image is made of instead, here: the static
# release build of hearthd, its flags, and a start / hello / health / set / get / SIGTERM cycle of
# that binary on free loopback ports with a temporary data directory, under jemalloc as in the
# image when jemalloc is installed; the image's health check (`hearthd --health-check`) against
# it, with and without TLS.
#
# Needs bash (it talks to the server through /dev/tcp), no nc; openssl for the TLS checks.
# HEARTH_SMOKE_BIN=<path to hearthd> skips the release build in the second case.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE="${HEARTH_SMOKE_IMAGE:-hearth:smoke}"

log() { printf '==> %s\n' "$*"; }
fail() {
    printf 'FAIL: %s\n' "$*" >&2
    exit 1
}

# Opens a connection to $1:$2, reads the hello line, then sends each further argument as one
# request line and reads its answer. Prints every line received; fails on a timeout.
talk() {
    local host=$1 port=$2 line request
    shift 2
    exec 3<>"/dev/tcp/$host/$port" || fail "can't connect to $host:$port"
    IFS= read -r -t 10 line <&3 || fail "no hello line from $host:$port"
    printf '%s\n' "$line"
    for request in "$@"; do
        printf '%s\n' "$request" >&3
        IFS= read -r -t 10 line <&3 || fail "no answer to $request"
        printf '%s\n' "$line"
    done
    exec 3>&-
}

# Waits up to $3 seconds until a connection to $1:$2 is greeted with a hello line; gives up early
# when the optional process $4 has exited.
wait_for_hello() {
    local host=$1 port=$2 seconds=$3 watched=${4:-} i
    for ((i = 0; i < seconds * 10; i++)); do
        if [[ -n $watched ]] && ! kill -0 "$watched" 2>/dev/null; then return 1; fi
        if (exec 3<>"/dev/tcp/$host/$port" && IFS= read -r -t 2 line <&3 && [[ $line == *'"event":"hello"'* ]]) \
            2>/dev/null; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# Asks GET /.well-known/hearth/health at $1:$2 over plain HTTP/1.0, as the image's health check
# does, and fails unless the answer is 200 with "status":"ok". Waits up to 10 s for the port to
# accept (the HTTP listener opens just after the line protocol's).
check_health() {
    local host=$1 port=$2 response="" i
    for ((i = 0; i < 100; i++)); do
        if (exec 4<>"/dev/tcp/$host/$port") 2>/dev/null; then break; fi
        sleep 0.1
    done
    exec 4<>"/dev/tcp/$host/$port" || fail "can't connect to $host:$port"
    printf 'GET /.well-known/hearth/health HTTP/1.0\r\n\r\n' >&4
    # The server closes the connection after an HTTP/1.0 answer: read up to there.
    IFS= read -r -d '' -t 10 response <&4 || true
    exec 4>&-
    local status=${response%%$'\r'*}
    printf '    %s\n' "$status" "${response##*$'\r\n\r\n'}"
    [[ $status == 'HTTP/1.'[01]' 200 '* ]] || fail "the health endpoint answered: $status"
    [[ $response == *'"status":"ok"'* ]] || fail "the health endpoint is not ok: $response"
}

# The admin secret of the servers started here (a throwaway, passed in the environment).
export HEARTH_ADMIN_SECRET="smoke-$RANDOM$RANDOM$RANDOM"

# Checks that a fresh server at $1:$2, under the image's locked rules, refuses an unauthenticated
# write, then accepts a set and a get from an admin.
check_set_and_get() {
    local host=$1 port=$2 output
    output=$(talk "$host" "$port" \
        '{"op":"set","id":0,"path":"/smoke","value":1}' \
        "{\"op\":\"auth\",\"id\":\"a\",\"token\":\"$HEARTH_ADMIN_SECRET\"}" \
        '{"op":"set","id":1,"path":"/smoke","value":{"ok":true}}' \
        '{"op":"get","id":2,"path":"/smoke"}')
    printf '%s\n' "$output" | sed "s/$HEARTH_ADMIN_SECRET/<secret>/; s/^/    /"
    local hello denied auth set get
    { IFS= read -r hello; IFS= read -r denied; IFS= read -r auth; IFS= read -r set; IFS= read -r get; } <<<"$output"
    [[ $hello == '{"event":"hello","protocol":1,'* ]] || fail "unexpected hello: $hello"
    [[ $denied == *'"code":"permission_denied"'* ]] || fail "an unauthenticated set was not refused: $denied"
    [[ $auth == '{"id":"a","ok":true,"auth":{"admin":true}}' ]] || fail "unexpected answer to auth: $auth"
    [[ $set == '{"id":1,"ok":true,"rev":1}' ]] || fail "unexpected answer to set: $set"
    [[ $get == '{"id":2,"ok":true,"value":{"ok":true},"rev":1}' ]] || fail "unexpected answer to get: $get"
}

# A throwaway self-signed certificate for 127.0.0.1 and localhost in directory $1 (server.crt,
# server.key; readable by everyone, so that the container's user can read the mounted key).
make_certificate() {
    openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
        -keyout "$1/server.key" -out "$1/server.crt" >/dev/null 2>&1 || fail "openssl could not make a certificate"
    chmod 0644 "$1/server.key" "$1/server.crt"
}

# Sends setRules (as admin) to $1:$2 with the rules document $3 and expects ok.
check_set_rules() {
    local output
    output=$(talk "$1" "$2" "{\"op\":\"auth\",\"id\":\"a\",\"token\":\"$HEARTH_ADMIN_SECRET\"}" \
        "{\"op\":\"setRules\",\"id\":1,\"rules\":$3}")
    [[ $(tail -n1 <<<"$output") == '{"id":1,"ok":true'* ]] || fail "setRules was refused: $(tail -n1 <<<"$output")"
}

# Expects the rules in force at $1:$2 (getRules, as admin) to contain $3.
check_rules_contain() {
    local output
    output=$(talk "$1" "$2" "{\"op\":\"auth\",\"id\":\"a\",\"token\":\"$HEARTH_ADMIN_SECRET\"}" \
        '{"op":"getRules","id":1}')
    [[ $(tail -n1 <<<"$output") == *"$3"* ]] || fail "the rules in force are not the ones set: $(tail -n1 <<<"$output")"
}

# Waits up to 60 s for container $1 to be healthy.
wait_healthy() {
    local cid=$1 status="" i
    for ((i = 0; i < 120; i++)); do
        status=$(docker inspect -f '{{.State.Health.Status}}' "$cid")
        [[ $status == healthy ]] && return 0
        if [[ $(docker inspect -f '{{.State.Running}}' "$cid") != true ]]; then
            docker logs "$cid" >&2 || true
            fail "the container stopped while starting"
        fi
        sleep 0.5
    done
    docker logs "$cid" >&2 || true
    fail "the container is not healthy after 60 s (status: $status)"
}

smoke_docker() {
    log "building image $IMAGE"
    docker build -t "$IMAGE" .

    log "starting a container"
    local cid
    cid=$(docker run -d -p 127.0.0.1::9000 -p 127.0.0.1::9080 -e HEARTH_ADMIN_SECRET \
        -v "$PWD/config/docker/rules.json:/etc/hearth/rules.json:ro" "$IMAGE")
    # shellcheck disable=SC2064  # expand $cid now
    trap "docker rm -f $cid >/dev/null 2>&1 || true" EXIT
    local port http_port
    port=$(docker port "$cid" 9000/tcp | head -n1 | sed 's/.*://')
    [[ -n $port ]] || fail "no host port published for 9000/tcp"
    http_port=$(docker port "$cid" 9080/tcp | head -n1 | sed 's/.*://')
    [[ -n $http_port ]] || fail "no host port published for 9080/tcp"
    log "container ${cid:0:12} listens on 127.0.0.1:$port (HTTP: $http_port); waiting for it to be healthy"

    wait_healthy "$cid"
    wait_for_hello 127.0.0.1 "$port" 10 || fail "no hello through the published port $port"
    docker exec "$cid" grep -q libjemalloc /proc/1/maps || fail "jemalloc is not preloaded in the container"

    log "health, through the published HTTP port"
    check_health 127.0.0.1 "$http_port"

    log "set and get"
    check_set_and_get 127.0.0.1 "$port"

    log "setRules with the rules file mounted read-only, then a restart"
    local rules='{"rules":{".read":"auth != null",".write":"auth != null","smoke":{".read":true}}}'
    check_set_rules 127.0.0.1 "$port" "$rules"
    docker restart -t 30 "$cid" >/dev/null
    port=$(docker port "$cid" 9000/tcp | head -n1 | sed 's/.*://')
    wait_healthy "$cid"
    wait_for_hello 127.0.0.1 "$port" 10 || fail "no hello after the restart"
    check_rules_contain 127.0.0.1 "$port" '"smoke":{".read":true}'

    log "docker stop (SIGTERM)"
    docker stop -t 30 "$cid" >/dev/null
    local code
    code=$(docker inspect -f '{{.State.ExitCode}}' "$cid")
    if [[ $code != 0 ]]; then
        docker logs "$cid" >&2 || true
        fail "the container exited with status $code, expected 0"
    fi
    docker rm "$cid" >/dev/null
    trap - EXIT

    log "with TLS on: the image's health check speaks TLS"
    local certs
    certs=$(mktemp -d)
    make_certificate "$certs"
    cid=$(docker run -d -e HEARTH_ADMIN_SECRET -v "$certs:/etc/hearth/tls:ro" \
        -e HEARTH_TLS_CERTIFICATE=/etc/hearth/tls/server.crt -e HEARTH_TLS_KEY=/etc/hearth/tls/server.key "$IMAGE")
    # shellcheck disable=SC2064  # expand $cid and $certs now
    trap "docker rm -f $cid >/dev/null 2>&1 || true; rm -rf '$certs'" EXIT
    wait_healthy "$cid"
    docker rm -f "$cid" >/dev/null
    rm -rf "$certs"
    trap - EXIT
    log "OK: image $IMAGE builds, serves, keeps rules set at run time, is healthy with TLS, and stops cleanly"
}

smoke_local() {
    local bin
    if [[ -n ${HEARTH_SMOKE_BIN:-} ]]; then
        # A hearthd built already (e.g. a debug build), to check this script itself quickly.
        bin=$HEARTH_SMOKE_BIN
        log "using $bin instead of building the release binary"
    else
        log "building the release binary the image is built from"
        swift build -c release --static-swift-stdlib --product hearthd
        bin="$(swift build -c release --static-swift-stdlib --show-bin-path)/hearthd"
    fi
    [[ -x $bin ]] || fail "no binary at $bin"

    log "checking the entrypoint's flags"
    local help flag
    help=$("$bin" --help)
    for flag in --host --port --http-port --data-dir --config --fsync --log-level; do
        grep -q -- "$flag" <<<"$help" || fail "hearthd --help does not list $flag"
    done

    # Under jemalloc when it is installed, as in the image (`env` execs hearthd: the same pid).
    local preload=(env) library
    library=$(compgen -G "/usr/lib/*/libjemalloc.so.2" | head -n 1 || true)
    [[ -n $library ]] && preload=(env LD_PRELOAD="$library")

    local dir
    dir=$(mktemp -d)
    # pid is global so that the exit trap still sees it after a failure.
    pid=""
    # shellcheck disable=SC2064  # expand $dir now; $pid when the trap runs
    trap "if [[ -n \${pid:-} ]]; then kill -KILL \$pid 2>/dev/null || true; fi; rm -rf '$dir'" EXIT

    # The image's locked rules, read-only as README.md mounts them.
    cp config/docker/rules.json "$dir/rules.json"
    chmod 0444 "$dir/rules.json"

    # Free loopback ports (the line protocol's and the HTTP API's): pick random ones until both
    # are closed and the server binds them.
    local port http_port attempt
    for ((attempt = 0; attempt < 10; attempt++)); do
        port=$((20000 + RANDOM % 40000))
        http_port=$((20000 + RANDOM % 40000))
        [[ $port != "$http_port" ]] || continue
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$http_port") 2>/dev/null; then continue; fi
        log "starting $bin on 127.0.0.1:$port (HTTP: $http_port) with data directory $dir"
        "${preload[@]}" "$bin" --host 127.0.0.1 --port "$port" --http-port "$http_port" --data-dir "$dir/data" \
            --rules-file "$dir/rules.json" >"$dir/log" 2>&1 &
        pid=$!
        if wait_for_hello 127.0.0.1 "$port" 30 "$pid"; then break; fi
        if kill -0 "$pid" 2>/dev/null; then
            cat "$dir/log" >&2
            fail "hearthd runs but sends no hello on port $port"
        fi
        wait "$pid" || true
        pid=""
        # Someone else took the port in the meantime: try another one. Anything else is a failure.
        if ! grep -qi 'in use' "$dir/log"; then
            cat "$dir/log" >&2
            fail "hearthd exited at startup"
        fi
    done
    [[ -n $pid ]] || fail "could not start hearthd on a free port"

    if [[ -n $library ]]; then
        grep -q libjemalloc "/proc/$pid/maps" || fail "jemalloc ($library) did not load"
        log "running under jemalloc ($library)"
    fi

    log "health"
    check_health 127.0.0.1 "$http_port"
    log "the image's health check: hearthd --health-check"
    "$bin" --health-check --port "$port" --http-port "$http_port" || fail "hearthd --health-check found it unhealthy"

    log "set and get"
    check_set_and_get 127.0.0.1 "$port"

    log "setRules with the rules file read-only (kept in the data directory)"
    check_set_rules 127.0.0.1 "$port" '{"rules":{".read":"auth != null",".write":"auth != null","smoke":{".read":true}}}'
    [[ -f $dir/data/rules.accepted.json ]] || fail "setRules left no rules.accepted.json in the data directory"

    log "SIGTERM"
    kill -TERM "$pid"
    local i
    for ((i = 0; i < 300; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && fail "hearthd still runs 30 s after SIGTERM"
    local code=0
    wait "$pid" || code=$?
    pid=""
    if [[ $code != 0 ]]; then
        cat "$dir/log" >&2
        fail "hearthd exited with status $code after SIGTERM, expected 0"
    fi
    "$bin" --health-check --port "$port" --http-port "$http_port" 2>/dev/null &&
        fail "hearthd --health-check found a stopped server healthy"

    if command -v openssl >/dev/null; then
        log "with TLS on: hearthd --health-check speaks TLS"
        mkdir -p "$dir/tls"
        make_certificate "$dir/tls"
        HEARTH_TLS_CERTIFICATE="$dir/tls/server.crt" HEARTH_TLS_KEY="$dir/tls/server.key" \
            "${preload[@]}" "$bin" --host 127.0.0.1 --port "$port" --http-port "$http_port" \
            --data-dir "$dir/tls-data" --rules-file "$dir/rules.json" >"$dir/tls.log" 2>&1 &
        pid=$!
        local healthy=false
        for ((i = 0; i < 100; i++)); do
            if HEARTH_TLS_CERTIFICATE="$dir/tls/server.crt" HEARTH_TLS_KEY="$dir/tls/server.key" \
                "$bin" --health-check --port "$port" --http-port "$http_port" 2>/dev/null; then
                healthy=true
                break
            fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        $healthy || { cat "$dir/tls.log" >&2; fail "hearthd --health-check did not find the TLS server healthy"; }
        # Without the TLS settings the check speaks plain text, which the TLS server does not.
        "$bin" --health-check --port "$port" --http-port "$http_port" 2>/dev/null &&
            fail "a plain-text check passed against the TLS server"
        kill -TERM "$pid"
        wait "$pid" || fail "the TLS server exited with status $? after SIGTERM"
        pid=""
    else
        log "no openssl: the TLS health check was not tried"
    fi
    log "OK: release binary builds, serves, and stops cleanly (the image itself was not built: no Docker engine)"
}

if docker info >/dev/null 2>&1; then
    smoke_docker
else
    log "docker info failed: no Docker engine on this host; checking the release binary instead"
    smoke_local
fi
