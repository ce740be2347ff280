package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// wazeroEngine is the baseline: bare wazero v1.12.0 with the same WASI
// surface Stint gives a task (argv, stdin, stdout, stderr, real clocks,
// crypto random; no env, no files) and nothing else: compile once; per task
// InstantiateModule (start functions off), call _start, Close.
type wazeroEngine struct {
	g                 guests
	rt                wazero.Runtime
	base              wazero.ModuleConfig
	noop, hello, loop wazero.CompiledModule
	mods              map[string]wazero.CompiledModule // by guest name
}

func (e *wazeroEngine) info() string {
	return "wazero " + wazeroVersion + ", WithCloseOnContextDone(true), instantiate+_start+close per task"
}

func (e *wazeroEngine) setup(ctx context.Context, g guests) error {
	e.g = g
	e.rt = wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCloseOnContextDone(true))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, e.rt); err != nil {
		return err
	}
	if err := instantiateStubs(ctx, e.rt); err != nil { // stubs.go
		return err
	}
	var err error
	for _, m := range []struct {
		dst  *wazero.CompiledModule
		wasm []byte
	}{{&e.noop, g.noop}, {&e.hello, g.hello}, {&e.loop, g.loop}} {
		if *m.dst, err = e.rt.CompileModule(ctx, m.wasm); err != nil {
			return err
		}
	}
	e.mods = map[string]wazero.CompiledModule{"noop": e.noop, "hello": e.hello}
	for _, name := range []string{"primes", "data8m"} {
		wasm, _ := g.module(name)
		if e.mods[name], err = e.rt.CompileModule(ctx, wasm); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	e.base = wazeroModuleConfig()
	return nil
}

// wazeroModuleConfig is the per-task module config shared by the bare
// wazero and the Extism peers.
func wazeroModuleConfig() wazero.ModuleConfig {
	return wazero.NewModuleConfig().
		WithName("").
		WithArgs("task").
		WithSysWalltime().
		WithSysNanotime().
		WithRandSource(rand.Reader).
		WithStartFunctions()
}

// exitOK maps wazero's exit error for code 0 to nil.
func exitOK(err error) error {
	var ee *sys.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 0 {
		return nil
	}
	return err
}

func (e *wazeroEngine) newTask(guest string) (taskFunc, func(), error) {
	mod, ok := e.mods[guest]
	if !ok {
		return nil, nil, fmt.Errorf("wazero: unknown guest %q", guest)
	}
	ctx := context.Background()
	input := e.g.inputFor(guest)
	var stdout, stderr bytes.Buffer
	return func() error {
		stdout.Reset()
		stderr.Reset()
		cfg := e.base.WithStdin(bytes.NewReader(input)).WithStdout(&stdout).WithStderr(&stderr)
		inst, err := e.rt.InstantiateModule(ctx, mod, cfg)
		if err != nil {
			return err
		}
		_, err = inst.ExportedFunction("_start").Call(ctx)
		_ = inst.Close(ctx)
		if err = exitOK(err); err != nil {
			return fmt.Errorf("wazero: %w (stderr %q)", err, stderr.Bytes())
		}
		return checkOut(&e.g, guest, stdout.Bytes())
	}, func() {}, nil
}

func (e *wazeroEngine) stop() (time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := newSignalWriter()
	inst, err := e.rt.InstantiateModule(ctx, e.loop, e.base.WithStderr(sig))
	if err != nil {
		return 0, err
	}
	d, err, werr := timeStop(sig.ch, cancel, func() error {
		_, err := inst.ExportedFunction("_start").Call(ctx)
		return err
	})
	if werr != nil {
		return 0, werr
	}
	_ = inst.Close(context.Background())
	var ee *sys.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != sys.ExitCodeContextCanceled {
		return 0, fmt.Errorf("wazero: stuck guest ended with %v, want context canceled", err)
	}
	return d, nil
}

func (e *wazeroEngine) close() { _ = e.rt.Close(context.Background()) }
