package main

import (
	"context"

	"github.com/bytecodealliance/wasmtime-go/v39"
	"github.com/tetratelabs/wazero"
)

// The `stint` host module's functions, as stubs for the peers that run the
// primes guest (which imports them; see docs/guest-abi.md): no stop is
// ever requested, no checkpoint exists or is kept, progress is dropped,
// the deadline is far. Stint gives the real ones.

const stubDeadlineMS = int64(1) << 40

// instantiateStubs adds the stint module's stubs to a wazero runtime.
func instantiateStubs(ctx context.Context, rt wazero.Runtime) error {
	_, err := rt.NewHostModuleBuilder("stint").
		NewFunctionBuilder().WithFunc(func() int32 { return 0 }).Export("stop_requested").
		NewFunctionBuilder().WithFunc(func(uint32, uint32) int32 { return 0 }).Export("checkpoint_save").
		NewFunctionBuilder().WithFunc(func() int32 { return -1 }).Export("checkpoint_size").
		NewFunctionBuilder().WithFunc(func(uint32, uint32) int32 { return 0 }).Export("checkpoint_load").
		NewFunctionBuilder().WithFunc(func(int64, int64) {}).Export("progress").
		NewFunctionBuilder().WithFunc(func() int64 { return stubDeadlineMS }).Export("deadline_ms").
		Instantiate(ctx)
	return err
}

// defineStubs adds the stint module's stubs to a wasmtime linker.
func defineStubs(l *wasmtime.Linker) error {
	for name, f := range map[string]any{
		"stop_requested":  func() int32 { return 0 },
		"checkpoint_save": func(int32, int32) int32 { return 0 },
		"checkpoint_size": func() int32 { return -1 },
		"checkpoint_load": func(int32, int32) int32 { return 0 },
		"progress":        func(int64, int64) {},
		"deadline_ms":     func() int64 { return stubDeadlineMS },
	} {
		if err := l.FuncWrap("stint", name, f); err != nil {
			return err
		}
	}
	return nil
}
