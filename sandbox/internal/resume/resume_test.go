package resume_test

import (
	"context"
	"errors"
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
	// env.wait(x, n), a blocking import: it returns x*n+1 and emits
	// -x-1; its waitAt-th call (counted over the calls that began) unwinds
	// instead, as a host function asked to suspend while it blocks does.
	waits, waitAt int
}

// blocking is the mix's blocking import.
var blocking = resume.Import{Module: "env", Name: "wait"}

// runToEnd runs res, and resumes it in a fresh runtime each time it
// suspends, calling again (before each resume) to set when it suspends
// next, until a run ends; it returns the number of runs.
func (h *host) runToEnd(t *testing.T, res *resume.Resumable, again func()) int {
	t.Helper()
	snap, suspended := h.run(t, res, nil)
	runs := 1
	for suspended {
		again()
		snap, suspended = h.run(t, res, snap)
		runs++
	}
	return runs
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
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		h.waits++
		if h.waits == h.waitAt {
			m.ExportedGlobal(resume.ExportUnwinding).(api.MutableGlobal).Set(1)
			m.ExportedGlobal(resume.ExportPoint).(api.MutableGlobal).Set(0)
			s[0] = 0xdead // a stand-in the guest must not use
			return
		}
		h.out = append(h.out, -int64(s[0])-1)
		s[0] = s[0]*uint64(uint32(s[1])) + 1
	}), []api.ValueType{api.ValueTypeI64, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}).Export("wait").
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
	wasm, err := resume.Transform(load(t, "mix.wasm"), blocking)
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
	runs := h.runToEnd(t, wasm, func() { h.suspend = h.ticks + 3 })
	if got := fmt.Sprint(h.out); got != want {
		t.Fatalf("suspended every 3 ticks: %s, want %s", got, want)
	}
	t.Logf("%d runs", runs)
}

// TestTransformKeepsBehaviour runs the module before and after the
// transform, never suspended: the same outputs.
func TestTransformKeepsBehaviour(t *testing.T) {
	orig := load(t, "mix.wasm")
	wasm, err := resume.Transform(orig, blocking)
	if err != nil {
		t.Fatal(err)
	}
	a, b := &host{}, &host{}
	a.run(t, &resume.Resumable{Wasm: orig}, nil)
	b.run(t, wasm, nil)
	if fmt.Sprint(a.out) != fmt.Sprint(b.out) || a.ticks != b.ticks || a.waits == 0 {
		t.Fatalf("before %v (%d ticks), after %v (%d ticks)", a.out, a.ticks, b.out, b.ticks)
	}
}

// TestSuspendInEveryWait suspends the guest inside each of its blocking
// calls in turn (the host function unwinds instead of returning), then
// inside every second one of one run, resuming each time in a fresh
// runtime: the call is made again with the arguments it had, and the
// outputs equal the uninterrupted run's.
func TestSuspendInEveryWait(t *testing.T) {
	wasm, err := resume.Transform(load(t, "mix.wasm"), blocking)
	if err != nil {
		t.Fatal(err)
	}
	base := &host{}
	base.run(t, wasm, nil)
	want := fmt.Sprint(base.out)
	if base.waits < 3 {
		t.Fatalf("the mix made %d blocking calls; the test needs a few", base.waits)
	}
	for k := 1; k <= base.waits; k++ {
		h := &host{waitAt: k}
		snap, suspended := h.run(t, wasm, nil)
		if !suspended {
			t.Fatalf("wait %d: the guest did not unwind", k)
		}
		h.waitAt = -1
		if snap, suspended = h.run(t, wasm, snap); suspended {
			t.Fatalf("wait %d: unwound again, unasked (%v)", k, snap != nil)
		}
		if got := fmt.Sprint(h.out); got != want {
			t.Fatalf("suspended in wait %d: %s, want %s", k, got, want)
		}
	}
	h := &host{waitAt: 2}
	runs := h.runToEnd(t, wasm, func() { h.waitAt = h.waits + 2 })
	if got := fmt.Sprint(h.out); got != want {
		t.Fatalf("suspended in every second wait: %s, want %s", got, want)
	}
	if runs < base.waits/2 {
		t.Fatalf("%d runs for %d waits", runs, base.waits)
	}
}

// TestBlockingImportInTableRefused: a blocking import put in a table could
// be called through it, a call the guest could not make again when it
// resumes: the transform refuses the module, and accepts it when the
// import is not blocking.
func TestBlockingImportInTableRefused(t *testing.T) {
	wasm := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
		0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type 0: () -> ()
		0x02, 0x0c, 0x01, 0x03, 'e', 'n', 'v', 0x04, 'w', 'a', 'i', 't', 0x00, 0x00, // import env.wait, type 0
		0x04, 0x04, 0x01, 0x70, 0x00, 0x01, // a table of one funcref
		0x09, 0x07, 0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 0x00, // elem (i32.const 0) env.wait
	}
	_, err := resume.Transform(wasm, resume.Import{Module: "env", Name: "wait"})
	var re *resume.Error
	if !errors.As(err, &re) {
		t.Fatalf("a blocking import in a table: %v, want a refusal", err)
	}
	if _, err := resume.Transform(wasm); err != nil {
		t.Fatalf("the same module without blocking imports: %v", err)
	}
}
