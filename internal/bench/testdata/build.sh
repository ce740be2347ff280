#!/bin/sh
# Regenerates the benchmark's .wasm modules from the .wat beside them (needs
# wat2wasm from wabt). Run from anywhere: ./bench/testdata/build.sh
set -eu
cd "$(dirname "$0")"
for wat in *.wat; do
	wat2wasm --debug-names "$wat" -o "${wat%.wat}.wasm"
done
