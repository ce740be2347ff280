package sandbox

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// wasiCount is one WASI function whose time grows with a count the guest
// passes: the indices of its parameters that hold such counts, the
// largest count let through, and what it counts.
type wasiCount struct {
	params []int
	max    uint32
	what   string
}

// wasiCounts are the WASI functions that loop over a guest-given count in
// Go, in one host call the stop checks cannot split, or copy that many
// bytes into the host: found by attacking the runner, a loop of fd_write
// calls with 8,000,000 empty iovecs, of poll_oneoff with 600,000
// subscriptions, or of path_open with a 64 MiB path (a 64 MiB string in
// the host each call), outlived a 1 s attempt timeout by 0.8-1.1 s. Their
// limits are what real guests never pass: IOV_MAX (1,024 on Linux, where
// a larger writev is EINVAL) iovecs, 4,096 subscriptions (one per file
// descriptor polled, plus a clock), PATH_MAX (4,096) bytes of a path.
var wasiCounts = map[string]wasiCount{
	"fd_read":                 {[]int{2}, 1024, "iovecs"},
	"fd_write":                {[]int{2}, 1024, "iovecs"},
	"fd_pread":                {[]int{2}, 1024, "iovecs"},
	"fd_pwrite":               {[]int{2}, 1024, "iovecs"},
	"poll_oneoff":             {[]int{2}, 4096, "subscriptions"},
	"path_create_directory":   {[]int{2}, maxWASIPath, "path bytes"},
	"path_filestat_get":       {[]int{3}, maxWASIPath, "path bytes"},
	"path_filestat_set_times": {[]int{3}, maxWASIPath, "path bytes"},
	"path_link":               {[]int{3, 6}, maxWASIPath, "path bytes"},
	"path_open":               {[]int{3}, maxWASIPath, "path bytes"},
	"path_readlink":           {[]int{2}, maxWASIPath, "path bytes"},
	"path_remove_directory":   {[]int{2}, maxWASIPath, "path bytes"},
	"path_rename":             {[]int{2, 5}, maxWASIPath, "path bytes"},
	"path_symlink":            {[]int{1, 4}, maxWASIPath, "path bytes"},
	"path_unlink_file":        {[]int{2}, maxWASIPath, "path bytes"},
}

// maxWASIPath is the longest path a WASI call may name: Linux's PATH_MAX.
const maxWASIPath = 4096

// wasiListener is what Stint attaches to WASI's functions (wasiFactory):
// the count guard (wasiCounts), which ends the guest with ErrWASICount
// before the call runs, the disk budget's ENOSPC (diskErrnoListener), and
// for fd_read the start of a call's reads (runState.stdinFull).
type wasiListener struct {
	name  string
	count *wasiCount
	disk  bool
	read  bool // fd_read
}

// Before implements experimental.FunctionListener.
func (l wasiListener) Before(ctx context.Context, _ api.Module, _ api.FunctionDefinition, params []uint64, _ experimental.StackIterator) {
	if l.read {
		if st := stateOf(ctx); st != nil {
			st.stdinFull = false // this call's first read may suspend (waitStdin)
		}
	}
	if l.count == nil {
		return
	}
	for _, i := range l.count.params {
		if i >= len(params) {
			continue
		}
		if n := uint32(params[i]); n > l.count.max {
			panic(fmt.Errorf("%w: %s with %d %s, over %d", ErrWASICount, l.name, n, l.count.what, l.count.max))
		}
	}
}

// After implements experimental.FunctionListener.
func (l wasiListener) After(ctx context.Context, mod api.Module, def api.FunctionDefinition, results []uint64) {
	if l.disk {
		diskErrnoListener{}.After(ctx, mod, def, results)
	}
}

// Abort implements experimental.FunctionListener.
func (wasiListener) Abort(context.Context, api.Module, api.FunctionDefinition, error) {}

// wasiFactory attaches wasiListener to the WASI functions that need it:
// those of wasiCounts and diskWriteFuncs.
type wasiFactory struct{}

// NewFunctionListener implements experimental.FunctionListenerFactory.
func (wasiFactory) NewFunctionListener(def api.FunctionDefinition) experimental.FunctionListener {
	if def.ModuleName() != wasiModule {
		return nil
	}
	l := wasiListener{name: def.Name(), disk: diskWriteFuncs[def.Name()], read: def.Name() == "fd_read"}
	if c, ok := wasiCounts[def.Name()]; ok {
		l.count = &c
	}
	if l.count == nil && !l.disk {
		return nil
	}
	return l
}

// wasiCountFailure classifies a run ended by the count guard: a trap whose
// message names the call. It reports whether err was one.
func wasiCountFailure(err error, out *Outcome) bool {
	if !errors.Is(err, ErrWASICount) {
		return false
	}
	out.Kind = KindTrapped
	out.Message, out.Stack = splitTrap(err)
	out.Message = strings.TrimSuffix(out.Message, " (recovered by wazero)")
	return true
}
