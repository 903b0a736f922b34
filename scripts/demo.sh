#!/usr/bin/env bash
# The run command: install what is missing, then publish one post to the bundled Fixturebook platform
# through the full flow (SQLite store, headless Chromium, one write, read-back) and print the timeline.
# Run it again: the same post is already published and the platform still holds exactly one copy.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec cargo run --release --locked -- demo "$@"
