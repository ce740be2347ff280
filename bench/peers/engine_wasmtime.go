package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

// wasmtimeEngine is wasmtime-go v39 (cgo, Cranelift, its bundled static
// library). One Engine with epoch interruption on (the only way to stop a
// spinning guest from another thread in v39; it costs a check per loop
// header and function entry, like wazero's close-on-context-done) and the
// modules compiled once. Per task: NewStore, a WasiConfig with argv and
// stdin/stdout/stderr (the C API's WASI takes only file paths, so stdin is a
// pre-written file and stdout/stderr are per-goroutine files in tmpfs, read
// back after the call), SetEpochDeadline, Linker.Instantiate (the Linker
// has WASI defined; one per goroutine), call _start, Store.Close.
type wasmtimeEngine struct {
	g                 guests
	engine            *wasmtime.Engine
	noop, hello, loop *wasmtime.Module
	mods              map[string]*wasmtime.Module // by guest name
	dir               string
	stdinPaths        map[string]string // by guest name: the C API's WASI takes stdin as a file
}

func (e *wasmtimeEngine) info() string {
	return "wasmtime-go v39.0.1, epoch interruption, Store+Linker.Instantiate+_start+Store.Close per task"
}

func (e *wasmtimeEngine) setup(_ context.Context, g guests) error {
	e.g = g
	cfg := wasmtime.NewConfig()
	cfg.SetEpochInterruption(true)
	e.engine = wasmtime.NewEngineWithConfig(cfg)
	var err error
	for _, m := range []struct {
		dst  **wasmtime.Module
		wasm []byte
	}{{&e.noop, g.noop}, {&e.hello, g.hello}, {&e.loop, g.loop}} {
		if *m.dst, err = wasmtime.NewModule(e.engine, m.wasm); err != nil {
			return err
		}
	}
	e.mods = map[string]*wasmtime.Module{"noop": e.noop, "hello": e.hello}
	for _, name := range []string{"primes", "data8m"} {
		wasm, _ := g.module(name)
		if e.mods[name], err = wasmtime.NewModule(e.engine, wasm); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if e.dir, err = os.MkdirTemp(tmpfsDir(), "peers-wasmtime-"); err != nil {
		return err
	}
	e.stdinPaths = map[string]string{}
	for name := range e.mods {
		e.stdinPaths[name] = filepath.Join(e.dir, "stdin-"+name)
		if err := os.WriteFile(e.stdinPaths[name], g.inputFor(name), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tmpfsDir is /dev/shm when it is writable, else the default temp dir.
func tmpfsDir() string {
	if f, err := os.CreateTemp("/dev/shm", "peers-probe-"); err == nil {
		f.Close()
		os.Remove(f.Name())
		return "/dev/shm"
	}
	return ""
}

// farDeadline is the epoch deadline of a task that is never interrupted.
const farDeadline = 1 << 40

func (e *wasmtimeEngine) newLinker() (*wasmtime.Linker, error) {
	l := wasmtime.NewLinker(e.engine)
	if err := l.DefineWasi(); err != nil {
		l.Close()
		return nil, err
	}
	if err := defineStubs(l); err != nil { // stubs.go
		l.Close()
		return nil, err
	}
	return l, nil
}

func (e *wasmtimeEngine) newTask(guest string) (taskFunc, func(), error) {
	mod, ok := e.mods[guest]
	if !ok {
		return nil, nil, fmt.Errorf("wasmtime: unknown guest %q", guest)
	}
	stdinPath := e.stdinPaths[guest]
	linker, err := e.newLinker()
	if err != nil {
		return nil, nil, err
	}
	f, err := os.CreateTemp(e.dir, "out-")
	if err != nil {
		return nil, nil, err
	}
	f.Close()
	stdoutPath, stderrPath := f.Name(), f.Name()+".err"
	cleanup := func() {
		linker.Close()
		os.Remove(stdoutPath)
		os.Remove(stderrPath)
	}
	return func() error {
		store := wasmtime.NewStore(e.engine)
		defer store.Close()
		wasi := wasmtime.NewWasiConfig()
		wasi.SetArgv([]string{"task"})
		if err := wasi.SetStdinFile(stdinPath); err != nil {
			return err
		}
		if err := wasi.SetStdoutFile(stdoutPath); err != nil {
			return err
		}
		if err := wasi.SetStderrFile(stderrPath); err != nil {
			return err
		}
		store.SetWasi(wasi)
		store.SetEpochDeadline(farDeadline)
		inst, err := linker.Instantiate(store, mod)
		if err != nil {
			return err
		}
		_, err = inst.GetFunc(store, "_start").Call(store)
		var werr *wasmtime.Error
		if errors.As(err, &werr) {
			if code, ok := werr.ExitStatus(); ok && code == 0 {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("wasmtime: %w", err)
		}
		out, err := os.ReadFile(stdoutPath)
		if err != nil {
			return err
		}
		return checkOut(&e.g, guest, out)
	}, cleanup, nil
}

func (e *wasmtimeEngine) stop() (time.Duration, error) {
	linker, err := e.newLinker()
	if err != nil {
		return 0, err
	}
	defer linker.Close()
	// stderr is a pipe (opened through /proc/self/fd), so the first write
	// tells us the guest is spinning.
	pr, pw, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer pr.Close()
	store := wasmtime.NewStore(e.engine)
	defer store.Close()
	wasi := wasmtime.NewWasiConfig()
	wasi.SetArgv([]string{"task"})
	err = wasi.SetStderrFile(fmt.Sprintf("/proc/self/fd/%d", pw.Fd()))
	pw.Close()
	if err != nil {
		return 0, err
	}
	store.SetWasi(wasi)
	store.SetEpochDeadline(1)
	inst, err := linker.Instantiate(store, e.loop)
	if err != nil {
		return 0, err
	}
	start := inst.GetFunc(store, "_start")
	started := make(chan struct{})
	go func() {
		buf := make([]byte, 16)
		if n, _ := pr.Read(buf); n > 0 {
			close(started)
		}
	}()
	d, err, werr := timeStop(started, e.engine.IncrementEpoch, func() error {
		_, err := start.Call(store)
		return err
	})
	if werr != nil {
		return 0, werr
	}
	var trap *wasmtime.Trap
	if !errors.As(err, &trap) || trap.Code() == nil || *trap.Code() != wasmtime.Interrupt {
		return 0, fmt.Errorf("wasmtime: stuck guest ended with %v, want an interrupt trap", err)
	}
	return d, nil
}

func (e *wasmtimeEngine) close() {
	if e.dir != "" {
		os.RemoveAll(e.dir)
	}
}
