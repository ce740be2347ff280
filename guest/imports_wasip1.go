//go:build wasip1

package guest

import "unsafe"

// The raw imports of the `stint` host module. See docs/guest-abi.md.
// Pointers are passed as u32 offsets into linear memory; the host must not
// keep them after the call returns.

//go:wasmimport stint stop_requested
//go:noescape
func stopRequested() int32

//go:wasmimport stint checkpoint_save
//go:noescape
func checkpointSave(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport stint checkpoint_size
//go:noescape
func checkpointSize() int32

//go:wasmimport stint checkpoint_load
//go:noescape
func checkpointLoad(ptr unsafe.Pointer, n uint32) int32

//go:wasmimport stint progress
//go:noescape
func progress(done, total int64)

//go:wasmimport stint deadline_ms
//go:noescape
func deadlineMs() int64
