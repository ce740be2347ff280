// Package wasmtest writes WebAssembly modules byte by byte, for the tests
// of sandbox and its engines: bombs, malformed input and random programs
// that no .wat fixture should hold (build.go), and runs a module in plain
// wazero, to compare what a rewritten module does with what the original
// did (plain.go). Only tests import it.
package wasmtest
