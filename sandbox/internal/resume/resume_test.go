package resume_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/sandbox/internal/resume"
)

// A host for the transformed module alone (no rewrite, no sandbox): it
// asks the guest to suspend at the k-th env.tick, takes a snapshot
// (memory, mutable globals, frames) when the export returns unwound, and
// resumes it in a fresh runtime.

// compiled is the compilation cache the tests' runtimes share.
var compiled = wazero.NewCompilationCache()

type snapshot struct {
	memory  []byte
	globals map[string]uint64
	frames  []uint64
}

type host struct {
	out     []int64
	ticks   int
	suspend int // the tick at which to ask (0: never)
	frames  []uint64
}

func (h *host) run(t *testing.T, res *resume.Resumable, from *snapshot) (*snapshot, bool) {
	t.Helper()
	ctx := context.Background()
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(compiled)) // fresh, compiled once
	defer r.Close(ctx)
	_, err := r.NewHostModuleBuilder("env").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		h.out = append(h.out, int64(s[0]))
	}), []api.ValueType{api.ValueTypeI64}, nil).Export("emit").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, _ []uint64) {
		h.ticks++
		if h.ticks == h.suspend {
			m.ExportedGlobal(resume.ExportPoint).(api.MutableGlobal).Set(1)
		}
	}), nil, nil).Export("tick").
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.NewHostModuleBuilder(resume.ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		h.frames = append(h.frames, s[0])
	}), []api.ValueType{api.ValueTypeI64}, nil).Export(resume.PushFunc).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		if len(h.frames) == 0 {
			panic("pop of an empty frame stack")
		}
		s[0] = h.frames[len(h.frames)-1]
		h.frames = h.frames[:len(h.frames)-1]
	}), nil, []api.ValueType{api.ValueTypeI64}).Export(resume.PopFunc).
		Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := r.Instantiate(ctx, res.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	if from != nil {
		mem := mod.Memory()
		if grow := uint32(len(from.memory)) - mem.Size(); grow > 0 {
			mem.Grow(grow / 65536)
		}
		mem.Write(0, from.memory)
		for name, v := range from.globals {
			mod.ExportedGlobal(name).(api.MutableGlobal).Set(v)
		}
		h.frames = slices.Clone(from.frames)
		mod.ExportedGlobal(resume.ExportRewinding).(api.MutableGlobal).Set(1)
		mod.ExportedGlobal(resume.ExportPoint).(api.MutableGlobal).Set(1)
	}
	if _, err := mod.ExportedFunction("run").Call(ctx); err != nil {
		t.Fatal(err)
	}
	if uw := mod.ExportedGlobal(resume.ExportUnwinding); uw == nil || uw.Get() == 0 {
		if len(h.frames) != 0 {
			t.Fatalf("the run ended with %d values left on the frame stack", len(h.frames))
		}
		return nil, false
	}
	s := &snapshot{globals: map[string]uint64{}, frames: h.frames}
	h.frames = nil
	s.memory, _ = mod.Memory().Read(0, mod.Memory().Size())
	s.memory = slices.Clone(s.memory)
	for _, name := range res.Globals {
		s.globals[name] = mod.ExportedGlobal(name).Get()
	}
	return s, true
}

func load(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSuspendEveryTick suspends the guest at each of its ticks in turn,
// and then at every 3rd tick of one run, resuming each time in a fresh
// runtime: the outputs equal the uninterrupted run's.
func TestSuspendEveryTick(t *testing.T) {
	wasm, err := resume.Transform(load(t, "mix.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	base := &host{}
	if _, suspended := base.run(t, wasm, nil); suspended {
		t.Fatal("suspended without being asked")
	}
	want := fmt.Sprint(base.out)
	total := base.ticks
	t.Logf("uninterrupted: %s, %d ticks", want, total)
	for k := 1; k <= total; k++ {
		h := &host{suspend: k}
		snap, suspended := h.run(t, wasm, nil)
		n := 1
		for suspended {
			h.suspend = -1
			snap, suspended = h.run(t, wasm, snap)
			n++
		}
		if got := fmt.Sprint(h.out); got != want {
			t.Fatalf("suspended at tick %d: %s, want %s", k, got, want)
		}
		// A request after the last point finds none: the run ends.
		if n != 2 && (n != 1 || k < total-3) {
			t.Fatalf("suspended at tick %d: %d runs, want 2", k, n)
		}
	}
	// Many suspensions in one run.
	h := &host{suspend: 3}
	snap, suspended := h.run(t, wasm, nil)
	runs := 1
	for suspended {
		h.suspend = h.ticks + 3
		snap, suspended = h.run(t, wasm, snap)
		runs++
	}
	if got := fmt.Sprint(h.out); got != want {
		t.Fatalf("suspended every 3 ticks: %s, want %s", got, want)
	}
	t.Logf("%d runs", runs)
}

// TestTransformKeepsBehaviour runs the module before and after the
// transform, never suspended: the same outputs.
func TestTransformKeepsBehaviour(t *testing.T) {
	orig := load(t, "mix.wasm")
	wasm, err := resume.Transform(orig)
	if err != nil {
		t.Fatal(err)
	}
	a, b := &host{}, &host{}
	a.run(t, &resume.Resumable{Wasm: orig}, nil)
	b.run(t, wasm, nil)
	if fmt.Sprint(a.out) != fmt.Sprint(b.out) || a.ticks != b.ticks {
		t.Fatalf("before %v (%d ticks), after %v (%d ticks)", a.out, a.ticks, b.out, b.ticks)
	}
}
