// Command kvplugin is a Go plugin under Stint's calling convention
// (docs/plugins.md), written with its PDK (guest/plugin: no unsafe): a WASI
// reactor built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o kvplugin.wasm ./wasm-examples/kvplugin
//
// whose //go:wasmexport functions take their input through alloc (the
// PDK's) and return (ptr << 32 | len). It imports env.kv_get (the host's key-value
// get) and stint_plugin.config_get, so its manifest must grant "env",
// "stint_plugin" and "wasi_snapshot_preview1" (the Go runtime needs WASI).
//
//	alloc(len) -> ptr   the input buffer (the convention)
//	greet(name)         config "greeting" (default "hello"), then ", NAME", then " (call N)": N counts the calls this instance served (warm state)
//	lookup(key)         env.kv_get(key): the value, or "no such key: KEY"
//	upper(text)         text upper-cased
//	double(n)           2n; an input that is not a number fails the call (exit 1, the error on stderr)
//	noop()              returns at once
//	spin()              loops forever (a stuck plugin)
package main
