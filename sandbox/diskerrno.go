package sandbox

import (
	"context"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// The WASI preview 1 errnos the disk budget deals in.
const (
	wasiErrnoIO    = 29 // what wazero reports for any errno it has no name for
	wasiErrnoNoSpc = 51 // ENOSPC: "No space left on device"
)

// diskWriteFuncs are the WASI functions through which a guest can make a
// mount hold more: write, grow a file, or create one.
var diskWriteFuncs = map[string]bool{
	"fd_write": true, "fd_pwrite": true, "fd_allocate": true, "fd_filestat_set_size": true,
	"path_open": true, "path_create_directory": true, "path_symlink": true, "path_link": true,
}

// diskErrnoListener gives a guest ENOSPC when its disk budget refuses a
// call. wazero v1.12.0's file system interface (experimental/sys.Errno)
// has no ENOSPC or EDQUOT, and its WASI maps every errno it does not know
// to EIO: a mount can only report EIO. The budget records that it refused
// (mountfs.Budget.TakeRefused), and this listener, on WASI's functions
// that write (diskWriteFuncs) and nothing else, turns that call's EIO into
// ENOSPC as the call returns to the guest. A real EIO (or a real full
// disk, which wazero reports as EIO too) is left alone.
//
// ENOSPC rather than EDQUOT: it is what every libc, Go's os package and
// Rust's std (ErrorKind::StorageFull) know as "the disk is full", what a
// guest's error handling is written for, and what the kernel itself says
// when a filesystem runs out of blocks or inodes; EDQUOT is rarer in
// guests' code paths (Rust's name for it is still unstable).
//
// The results wazero hands After are the call's own stack: writing them
// changes what the guest sees (TestDiskBudgetENOSPC guards this).
type diskErrnoListener struct{}

// Before implements experimental.FunctionListener.
func (diskErrnoListener) Before(context.Context, api.Module, api.FunctionDefinition, []uint64, experimental.StackIterator) {
}

// After implements experimental.FunctionListener.
func (diskErrnoListener) After(ctx context.Context, _ api.Module, _ api.FunctionDefinition, results []uint64) {
	st := stateOf(ctx)
	if st == nil || st.mounts == nil || !st.mounts.TakeRefused() {
		return
	}
	if len(results) > 0 && results[0] == wasiErrnoIO { // the errno; wazero may pass the whole stack view
		results[0] = wasiErrnoNoSpc
	}
}

// Abort implements experimental.FunctionListener.
func (diskErrnoListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}
