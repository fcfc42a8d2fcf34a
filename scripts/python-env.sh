#!/usr/bin/env bash
# Creates .venv (beside Package.swift) with the Python packages the compatibility tests run:
# Google's firebase-admin, and Selenium for the web console's browser tests, from PyPI.
# Idempotent and quiet when everything is already there; prints the interpreter's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c "import firebase_admin, selenium" 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check -r scripts/python/requirements.txt >&2
fi
echo "$PWD/$venv/bin/python"
