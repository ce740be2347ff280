//go:build wasip1

package plugin

import "unsafe"

// alloc is the convention's alloc export: the input buffer.
//
//go:wasmexport alloc
func alloc(n uint32) unsafe.Pointer {
	return unsafe.Pointer(unsafe.SliceData(allocInput(n)))
}

// configGet is stint_plugin.config_get.
//
//go:wasmimport stint_plugin config_get
//go:noescape
func configGet(keyPtr, keyLen, bufPtr, bufLen uint32) int32

// Config returns the manifest's value for key (stint_plugin.config_get:
// the manifest must grant "stint_plugin"); false if it has none.
func Config(key string) (string, bool) {
	v, ok := Get(configGet, []byte(key))
	return string(v), ok
}
