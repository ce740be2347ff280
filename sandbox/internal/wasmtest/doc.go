// Package wasmtest writes WebAssembly modules byte by byte, for the tests
// of sandbox and its engines: bombs, malformed input and random programs
// that no .wat fixture should hold. Only tests import it.
package wasmtest
