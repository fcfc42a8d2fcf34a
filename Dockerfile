# syntax=docker/dockerfile:1
#
# hearthd in a container.
#   docker build -t hearth .
#   docker run -d --name hearth -p 9000:9000 -p 9080:9080 -v hearth-data:/data hearth
# scripts/docker-smoke.sh builds this image and checks it end to end.

ARG SWIFT_IMAGE=swift:6.3-noble

# ---- build: a release binary with the Swift runtime linked in statically ----
FROM ${SWIFT_IMAGE} AS build
WORKDIR /src
# Package.resolved (when present) pins the dependencies. The manifest also names the test targets,
# and SwiftPM insists that their directories exist, so Tests comes along even though only hearthd
# is built.
# zlib's headers for the CZlib target (the official Swift images have them; this makes sure).
RUN [ -f /usr/include/zlib.h ] || (apt-get update && apt-get install -y --no-install-recommends zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*)
COPY Package.* ./
COPY Sources ./Sources
COPY Tests ./Tests
RUN swift build -c release --static-swift-stdlib --product hearthd \
    && install -D -m 0755 "$(swift build -c release --static-swift-stdlib --show-bin-path)/hearthd" /out/hearthd

# ---- runtime: a plain Ubuntu with an unprivileged user ----
# The binary still links the C libraries dynamically: libc, libm, libstdc++, libgcc_s and libz,
# all of which the base image has; jemalloc is added and preloaded.
FROM ubuntu:24.04
# jemalloc as the allocator (README.md, "Allocator"): about a fifth more pipelined writes per second
# than glibc's malloc on the same binary. Linked under one path whatever the architecture.
# ca-certificates: the trust roots for an https jwtPublicKeysURL (docs/security.md, "Firebase Auth").
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && ln -s "$(ls /usr/lib/*/libjemalloc.so.2 | head -n 1)" /usr/local/lib/libjemalloc.so.2
ENV LD_PRELOAD=/usr/local/lib/libjemalloc.so.2
RUN groupadd --system hearth \
    && useradd --system --gid hearth --home-dir /data --no-create-home --shell /usr/sbin/nologin hearth \
    && mkdir -p /data /etc/hearth \
    && chown hearth:hearth /data
COPY --from=build /out/hearthd /usr/local/bin/hearthd
# The image is reachable from other machines, so its rules require sign-in; users authenticate
# with JWTs signed with HEARTH_JWT_SECRET (or the keys in jwtPublicKeys), admins with
# HEARTH_ADMIN_SECRET. Pass secrets with -e or an env file, never as arguments.
COPY config/hearth.json /etc/hearth/
COPY config/docker/rules.json /etc/hearth/rules.json
# Rules set at run time (`hearth rules set`, PUT /.settings/rules.json) are kept in the data
# volume (/data/rules.accepted.json), never written here: /etc/hearth may be mounted read-only.
# They win at start until the rules file changes (docs/security.md, "Rules set at run time").
# The configuration (and through it the rules) is read from here, whatever command is given;
# flags and HEARTH_* variables still override it.
ENV HEARTH_CONFIG=/etc/hearth/hearth.json
# Declared after the chown, so a new volume starts out owned by hearth.
VOLUME ["/data"]
USER hearth
WORKDIR /data
# 9000: the line protocol; 9080: the HTTP API (Firebase REST and streaming, health, metrics).
EXPOSE 9000 9080
# hearthd shuts down gracefully on SIGTERM: goaway, answer what was received, end event streams,
# exit 0.
STOPSIGNAL SIGTERM
# Healthy when the line protocol greets a connection with its hello line and the HTTP API's
# GET /.well-known/hearth/health answers 200 (the engine turns, the storage works).
# `hearthd --health-check` asks the server its own configuration describes: the ports and the
# scheme come from HEARTH_CONFIG and the HEARTH_* variables, so it speaks TLS when
# HEARTH_TLS_CERTIFICATE (or tlsCertificate) is set, to loopback, without verifying the
# certificate. Change the ports with HEARTH_PORT and HEARTH_HTTP_PORT or the configuration file,
# not with flags after the image name, which the check does not see.
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/hearthd", "--health-check"]
ENTRYPOINT ["/usr/local/bin/hearthd"]
CMD ["--host", "0.0.0.0", "--data-dir", "/data"]
