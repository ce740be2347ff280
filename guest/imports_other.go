//go:build !wasip1

package guest

import (
	"sync/atomic"
	"unsafe"
)

// hostABI holds the raw host functions on targets other than wasip1, with the
// same signatures as the wasip1 imports, so that the wrappers can be tested
// on the host against a fake.
type hostABI struct {
	stopRequested  func() int32
	checkpointSave func(ptr unsafe.Pointer, n uint32) int32
	checkpointSize func() int32
	checkpointLoad func(ptr unsafe.Pointer, n uint32) int32
	progress       func(done, total int64)
	deadlineMs     func() int64
}

// standalone is the stand-in host used outside of a Stint sandbox: no stop,
// no checkpoint to start from, saves accepted and discarded, no deadline.
var standalone = &hostABI{
	stopRequested:  func() int32 { return 0 },
	checkpointSave: func(unsafe.Pointer, uint32) int32 { return codeOK },
	checkpointSize: func() int32 { return -1 },
	checkpointLoad: func(unsafe.Pointer, uint32) int32 { return -1 },
	progress:       func(int64, int64) {},
	deadlineMs:     func() int64 { return -1 },
}

// host is the current stand-in; tests swap it (see export_test.go).
var host atomic.Pointer[hostABI]

func init() { host.Store(standalone) }

func stopRequested() int32                              { return host.Load().stopRequested() }
func checkpointSave(ptr unsafe.Pointer, n uint32) int32 { return host.Load().checkpointSave(ptr, n) }
func checkpointSize() int32                             { return host.Load().checkpointSize() }
func checkpointLoad(ptr unsafe.Pointer, n uint32) int32 { return host.Load().checkpointLoad(ptr, n) }
func progress(done, total int64)                        { host.Load().progress(done, total) }
func deadlineMs() int64                                 { return host.Load().deadlineMs() }
