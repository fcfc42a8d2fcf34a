#!/usr/bin/env bash
# Lints the sources with swift-format (when available) and builds with warnings treated as
# failures. `swift format --in-place --recursive Sources Tests Package.swift` fixes most lint
# findings.
#
# Only files the build compiles report their warnings, so an incremental build can miss warnings
# of unchanged files; delete .build for a full check.
set -euo pipefail
cd "$(dirname "$0")/.."

if swift format --version >/dev/null 2>&1; then
    echo "==> swift format lint"
    swift format lint --strict --recursive Sources Tests Package.swift
else
    echo "==> swift format is not available; skipping the lint"
fi

echo "==> swift build"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift build 2>&1 | tee "$log"

# Warnings from dependencies (.build/checkouts) are not ours to fix.
if grep 'warning:' "$log" | grep -v '/\.build[^/]*/checkouts/' >/dev/null; then
    echo "FAIL: the build has warnings:" >&2
    grep 'warning:' "$log" | grep -v '/\.build[^/]*/checkouts/' | sort -u >&2
    exit 1
fi
echo "==> OK"
