package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

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

// BadPointerError is a host function's trap for a pointer and length
// outside the guest's memory.
type BadPointerError struct {
	Module, Func      string // the host function ("" Module: Stint's own)
	Ptr, Len, MemSize uint32
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
	if st == nil || st.deadline == 0 {
		stack[0] = api.EncodeI64(-1)
		return
	}
	stack[0] = api.EncodeI64(max(0, time.Duration(st.deadline-monoNow()).Milliseconds()))
}
