// Package plugin is the Go PDK for plugins under Stint's calling
// convention (docs/plugins.md): a plugin author writes no unsafe code and
// packs no pointers.
//
// A Go plugin is a WASI reactor built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o p.wasm .
//
// Importing this package exports the convention's alloc (the input
// buffer, reused across calls). Each callable export takes the input's
// (ptr, len) as two uint32 and returns Output's uint64:
//
//	//go:wasmexport upper
//	func upper(ptr, n uint32) uint64 {
//		return plugin.Output(bytes.ToUpper(plugin.Input(ptr, n)))
//	}
//
// or, with an error ending the call as failed:
//
//	//go:wasmexport parse
//	func parse(ptr, n uint32) uint64 {
//		return plugin.Handle(ptr, n, func(in []byte) ([]byte, error) { ... })
//	}
//
// What else a plugin reaches, each only if its manifest grants the module:
//
//   - [Config] reads a value of its manifest (stint_plugin.config_get);
//   - [Get] calls a host function of the usual shape (key_ptr, key_len,
//     buf_ptr, buf_len) -> i32, declared with uint32 parameters, growing
//     the buffer as needed; [Ptr] passes bytes to any other host function;
//   - Stint's extras are package guest's: guest.StopRequested (the call's
//     soft stop and its timeout's grace), guest.Deadline (stint module).
//
// The PDK keeps the last output alive until the next call, as the
// convention asks. Outside wasip1 (a plugin's unit tests on the host) no
// alloc is exported and Config finds nothing; the rest behaves the same.
package plugin
