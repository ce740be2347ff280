#!/bin/sh
# Regenerates every .wasm fixture from the .wat beside it. Run from anywhere:
#
#	./internal/testwasm/wat/build.sh
#
# The flags must match fixturesWat2wasmFlags in fixtures_test.go, which checks
# that the committed .wasm files are up to date. --debug-names keeps function
# names, so trap stack traces show them.
set -eu
cd "$(dirname "$0")"
for wat in *.wat; do
	wat2wasm --debug-names "$wat" -o "${wat%.wat}.wasm"
done
