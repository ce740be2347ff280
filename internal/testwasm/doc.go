// Package testwasm helps tests use the example Go guests of
// wasm-examples without rebuilding them every time.
//
// [GoGuest] builds a guest with GOOS=wasip1 GOARCH=wasm into a cache
// directory shared by every test process, under a name that hashes the
// guest's sources, the guest SDK's sources, go.mod, go.sum and the Go
// version, so an edit rebuilds it and nothing else does. [CompileCacheDir]
// gives a directory to use as wazero's on-disk compilation cache, so that
// the 1.5-3 s compilation of a Go guest is paid once, not in every test;
// [DataDir] gives a runner's tests a data directory whose cache is that one.
//
// The cache directory is $STINT_TEST_CACHE, or stint-test-cache in the
// system's temporary directory. It is safe to delete at any time between
// test runs.
//
//	func TestHello(t *testing.T) {
//		wasmPath := testwasm.GoGuest(t, "hello")
//		cache, err := wazero.NewCompilationCacheWithDir(testwasm.CompileCacheDir(t))
//		...
//	}
package testwasm
