#!/usr/bin/env bash
# demo.sh RUNNER WASM_DIR: the durable queue end to end on the embedded SQLite
# store. Starts `runner serve`, queues a primes task and waits for its
# result, shows the task, then stops the runner with SIGTERM (phased stop).
set -euo pipefail
runner=$1 wasm=$2
data=$(mktemp -d "${TMPDIR:-/tmp}/stint-demo.XXXXXX")
trap 'kill "$serve" 2>/dev/null || true; rm -rf "$data"' EXIT

"$runner" serve --data-dir "$data" --http-addr "" --log-level warn &
serve=$!

echo '$ echo 1000000 | runner submit primes.wasm --input - --wait'
echo 1000000 | "$runner" submit "$wasm/primes.wasm" --input - --wait --data-dir "$data" --log-level warn
echo '$ runner tasks show 1'
"$runner" tasks show 1 --data-dir "$data" --log-level warn
kill -TERM "$serve"
wait "$serve"
echo "runner stopped cleanly (exit 0)"
