package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/sandbox/internal/extismkernel"
	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/mountfs"
)

// HostModule is the name of Stint's host module.
const HostModule = "stint"

// Return codes of checkpoint_save (docs/guest-abi.md).
const (
	checkpointOK        = 0
	checkpointTooLarge  = -1
	checkpointLeaseLost = -2
	checkpointFailed    = -3
)

// hostFuncs lists the functions of the "stint" module, for import checks.
var hostFuncs = map[string]bool{
	"stop_requested": true, "checkpoint_save": true, "checkpoint_size": true,
	"checkpoint_load": true, "progress": true, "deadline_ms": true,
}

// runState is the per-run state the host functions reach through the call's
// context.
type runState struct {
	hard       context.Context
	stopCh     <-chan struct{} // the soft stop (Spec.Stop)
	softAt     time.Time       // the deadline's soft stop (zero: none)
	sawStop    atomic.Bool
	deadline   time.Time // zero: none
	checkpoint []byte    // the checkpoint this run started with (nil: none)
	maxCP      int64
	save       CheckpointFunc
	onProgress ProgressFunc

	lastCP    []byte
	saved     int
	progDone  int64
	progTotal int64

	// The run's stdio and memory budget, reached through its ioSlot and
	// the allocator. stdin is &inputReader for an in-memory input.
	stdin          io.Reader
	input          bytes.Reader
	inputReader    stdinReader
	stdout, stderr cappedWriter
	budget         memory.Budget
	mounts         *mountfs.Budget // the mounts' open files and disk (mountfs); nil: no mounts

	watch runWatch    // the stop watchdog's entry (watchdog.go)
	work  workCounter // the work counter and budget (work.go)

	ident  *callIdentity        // who the run is for, for host functions (hostfunc.go); nil: nobody
	ext    *extismkernel.Kernel // an Extism plugin call's kernel; nil otherwise
	http   httpCall             // an Extism plugin call's HTTP (extism_http.go)
	output []byte               // a run's export's output (Spec.Export)
	env    *guestEnv            // the guest's environment (environ.go); nil: empty
}

// externalStop reports whether the caller asked the run to stop.
func (st *runState) externalStop() bool {
	select {
	case <-st.stopCh:
		return true
	default:
		return false
	}
}

// stopRequested reports whether the guest is asked to stop: by the caller,
// or because its attempt deadline is near.
func (st *runState) stopRequested() bool {
	return st.externalStop() || (!st.softAt.IsZero() && !time.Now().Before(st.softAt))
}

type runStateKey struct{}

func stateOf(ctx context.Context) *runState {
	st, _ := ctx.Value(runStateKey{}).(*runState)
	return st
}

// BadPointerError is the trap a host function raises when the guest passes
// a pointer and length outside its memory.
type BadPointerError struct {
	// Module and Func name the host function ("" Module: Stint's own).
	Module   string
	Func     string
	Ptr, Len uint32
	MemSize  uint32
}

func (e *BadPointerError) Error() string {
	mod := e.Module
	if mod == "" {
		mod = HostModule
	}
	return fmt.Sprintf("%s.%s: pointer out of bounds (ptr=%d len=%d, memory is %d bytes)", mod, e.Func, e.Ptr, e.Len, e.MemSize)
}

func memSize(m api.Module) uint32 {
	if mem := m.Memory(); mem != nil {
		return mem.Size()
	}
	return 0
}

func readGuest(m api.Module, fn string, ptr, n uint32) []byte {
	if mem := m.Memory(); mem != nil {
		if b, ok := mem.Read(ptr, n); ok {
			return b
		}
	}
	panic(&BadPointerError{Func: fn, Ptr: ptr, Len: n, MemSize: memSize(m)})
}

func instantiateHostModule(ctx context.Context, r wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := r.NewHostModuleBuilder(HostModule)
	fn := func(name string, f api.GoModuleFunc, params, results []api.ValueType, names ...string) {
		b.NewFunctionBuilder().WithGoModuleFunction(f, params, results).WithParameterNames(names...).Export(name)
	}
	fn("stop_requested", stopRequested, nil, []api.ValueType{i32})
	fn("checkpoint_save", checkpointSave, []api.ValueType{i32, i32}, []api.ValueType{i32}, "ptr", "len")
	fn("checkpoint_size", checkpointSize, nil, []api.ValueType{i32})
	fn("checkpoint_load", checkpointLoad, []api.ValueType{i32, i32}, []api.ValueType{i32}, "ptr", "len")
	fn("progress", progress, []api.ValueType{i64, i64}, nil, "done", "total")
	fn("deadline_ms", deadlineMS, nil, []api.ValueType{i64})
	_, err := b.Instantiate(ctx)
	return err
}

func stopRequested(ctx context.Context, _ api.Module, stack []uint64) {
	st := stateOf(ctx)
	if st != nil && st.stopRequested() {
		st.sawStop.Store(true)
		stack[0] = 1
		return
	}
	stack[0] = 0
}

func checkpointSave(ctx context.Context, m api.Module, stack []uint64) {
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	st := stateOf(ctx)
	data := readGuest(m, "checkpoint_save", ptr, n)
	if st == nil {
		stack[0] = api.EncodeI32(checkpointFailed)
		return
	}
	if int64(n) > st.maxCP {
		stack[0] = api.EncodeI32(checkpointTooLarge)
		return
	}
	blob := append([]byte(nil), data...)
	if st.save != nil {
		// The callback may block (a slow disk, a lock): it runs aside so the
		// hard context can always end the guest.
		done := make(chan error, 1)
		go func() { done <- st.save(st.hard, blob) }()
		select {
		case err := <-done:
			if err != nil {
				if errors.Is(err, ErrLeaseLost) {
					stack[0] = api.EncodeI32(checkpointLeaseLost)
				} else {
					stack[0] = api.EncodeI32(checkpointFailed)
				}
				return
			}
		case <-st.hard.Done():
			hardExit(st.hard)
		}
	}
	st.lastCP = blob
	st.saved++
	stack[0] = api.EncodeI32(checkpointOK)
}

func checkpointSize(ctx context.Context, _ api.Module, stack []uint64) {
	st := stateOf(ctx)
	if st == nil || st.checkpoint == nil {
		stack[0] = api.EncodeI32(-1)
		return
	}
	stack[0] = api.EncodeI32(int32(len(st.checkpoint)))
}

func checkpointLoad(ctx context.Context, m api.Module, stack []uint64) {
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	dst := readGuest(m, "checkpoint_load", ptr, n) // the whole buffer the guest claims
	st := stateOf(ctx)
	if st == nil || st.checkpoint == nil {
		stack[0] = api.EncodeI32(-1)
		return
	}
	stack[0] = api.EncodeI32(int32(copy(dst, st.checkpoint)))
}

func progress(ctx context.Context, _ api.Module, stack []uint64) {
	st := stateOf(ctx)
	if st == nil {
		return
	}
	done, total := int64(stack[0]), int64(stack[1])
	st.progDone, st.progTotal = done, total
	if st.onProgress != nil {
		st.onProgress(done, total)
	}
}

func deadlineMS(ctx context.Context, _ api.Module, stack []uint64) {
	st := stateOf(ctx)
	if st == nil || st.deadline.IsZero() {
		stack[0] = api.EncodeI64(-1)
		return
	}
	stack[0] = api.EncodeI64(max(0, time.Until(st.deadline).Milliseconds()))
}
