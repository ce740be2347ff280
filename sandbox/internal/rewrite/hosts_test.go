package rewrite

import (
	"context"
	"errors"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// The host modules the tests run rewritten modules against, as the
// sandbox's behave outside a run (sandbox/hostmod.go, interrupt.go,
// callstack.go): the sandbox's tests run them with the real ones.

// errCallStack is the sandbox's ErrCallStack, by its text.
var errCallStack = errors.New("call stack over its limit")

// instantiateStubs instantiates Stint's host module ("stint": no stop
// requested, no checkpoint, no deadline) and the rewrite's own (interrupt
// returns, or ends the guest once ctx is done; call_stack ends it with
// errCallStack) in r.
func instantiateStubs(ctx context.Context, r wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := r.NewHostModuleBuilder("stint")
	fn := func(name string, f api.GoModuleFunc, params, results []api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(f, params, results).Export(name)
	}
	ret := func(v uint64) api.GoModuleFunc {
		return func(_ context.Context, _ api.Module, stack []uint64) {
			if len(stack) > 0 {
				stack[0] = v
			}
		}
	}
	fn("stop_requested", ret(0), nil, []api.ValueType{i32})
	fn("checkpoint_save", ret(api.EncodeI32(-3)), []api.ValueType{i32, i32}, []api.ValueType{i32})
	fn("checkpoint_size", ret(api.EncodeI32(-1)), nil, []api.ValueType{i32})
	fn("checkpoint_load", ret(api.EncodeI32(-1)), []api.ValueType{i32, i32}, []api.ValueType{i32})
	fn("progress", func(context.Context, api.Module, []uint64) {}, []api.ValueType{i64, i64}, nil)
	fn("deadline_ms", ret(api.EncodeI64(-1)), nil, []api.ValueType{i64})
	if _, err := b.Instantiate(ctx); err != nil {
		return err
	}
	_, err := r.NewHostModuleBuilder(InterruptModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(interruptStub), []api.ValueType{i64}, nil).Export(InterruptFunc).
		NewFunctionBuilder().WithGoFunction(api.GoFunc(func(context.Context, []uint64) { panic(errCallStack) }), nil, nil).Export(CallStackFunc).
		Instantiate(ctx)
	return err
}

// interruptStub is the sandbox's interrupt outside a run: it returns
// while ctx lives, and ends the guest as a blocking host call would once
// it is done.
func interruptStub(ctx context.Context, _ api.Module, _ []uint64) {
	if ctx.Err() == nil {
		if d, ok := ctx.Deadline(); !ok || time.Now().Before(d) {
			return
		}
		<-ctx.Done()
	}
	code := sys.ExitCodeContextCanceled
	if ctx.Err() == context.DeadlineExceeded {
		code = sys.ExitCodeDeadlineExceeded
	}
	panic(sys.NewExitError(code))
}

// hostImports instantiates WASI preview 1 and the stubs in r, for Go
// guests.
func hostImports(ctx context.Context, r wazero.Runtime) error {
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return err
	}
	return instantiateStubs(ctx, r)
}
