package main

import (
	"context"
	"fmt"
	"time"

	"github.com/stint-run/stint/sandbox"
)

// stintEngine is Stint's sandbox package as a host app uses it:
// sandbox.New with the zero Config (default limits, WASI, the stint host
// module, close-on-context-done, in-memory compilation cache), Compile once,
// then Runtime.Run per task (fresh instance, stdin from Spec.Input, stdout and
// stderr captured into the Outcome, outcome classification).
type stintEngine struct {
	g                 guests
	rt                *sandbox.Runtime
	noop, hello, loop *sandbox.Module
	mods              map[string]*sandbox.Module // by guest name
}

func (e *stintEngine) info() string {
	return "sandbox.New(ctx, sandbox.Config{}) + Runtime.Run per task"
}

func (e *stintEngine) setup(ctx context.Context, g guests) error {
	e.g = g
	rt, err := sandbox.New(ctx, sandbox.Config{})
	if err != nil {
		return err
	}
	e.rt = rt
	for _, m := range []struct {
		dst  **sandbox.Module
		wasm []byte
	}{{&e.noop, g.noop}, {&e.hello, g.hello}, {&e.loop, g.loop}} {
		if *m.dst, err = rt.Compile(ctx, m.wasm); err != nil {
			return err
		}
	}
	e.mods = map[string]*sandbox.Module{"noop": e.noop, "hello": e.hello}
	for _, name := range []string{"primes", "data8m"} {
		wasm, _ := g.module(name)
		if e.mods[name], err = rt.Compile(ctx, wasm); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func (e *stintEngine) newTask(guest string) (taskFunc, func(), error) {
	mod, ok := e.mods[guest]
	if !ok {
		return nil, nil, fmt.Errorf("stint: unknown guest %q", guest)
	}
	ctx := context.Background()
	input := e.g.inputFor(guest)
	return func() error {
		out, err := e.rt.Run(ctx, mod, sandbox.Spec{Input: input})
		if err != nil {
			return err
		}
		if out.Kind != sandbox.KindSucceeded {
			return fmt.Errorf("stint: %s: %s", out.Kind, out.Message)
		}
		return checkOut(&e.g, guest, out.Stdout)
	}, func() {}, nil
}

func (e *stintEngine) stop() (time.Duration, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sig := newSignalWriter()
	var out *sandbox.Outcome
	d, runErr, err := timeStop(sig.ch, cancel, func() error {
		var err error
		out, err = e.rt.Run(ctx, e.loop, sandbox.Spec{StderrTee: sig})
		return err
	})
	if err != nil {
		return 0, err
	}
	if runErr != nil {
		return 0, runErr
	}
	if out.Kind != sandbox.KindForced {
		return 0, fmt.Errorf("stint: stuck guest ended %s, want forced", out.Kind)
	}
	return d, nil
}

func (e *stintEngine) close() { _ = e.rt.Close(context.Background()) }
