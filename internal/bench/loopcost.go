package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// loopShape is one shape of testdata/loops_cmd.wat, picked by stdin's first
// byte.
type loopShape struct{ key, label string }

var loopShapes = []loopShape{
	{"sum", "tight loop: one add per back-edge"},
	{"sum_call", "call-heavy: a wasm call per iteration"},
	{"sum_x8", "unrolled: eight adds per back-edge"},
	{"sum_host", "host-call-heavy: a host call (WASI sched_yield) per iteration"},
}

// loopIters is the iterations of every shape of loops_cmd.wat.
const loopIters = 1 << 22

// primesInput is the primes guest's stdin in LoopCost: primes below 300,000,
// one checkpoint at the end.
const primesInput = "300000 300000"

// topLoopShapes are the shapes of internal/testwasm/wat/bench_toploops.wat
// (while loops tested at their top), picked by stdin's first byte; each
// runs loopIters inner iterations.
var topLoopShapes = []loopShape{
	{"top", "while loop tested at its top: one add per iteration"},
	{"topnested", "nested while loops, both tested at their top (16 inner iterations)"},
}

// loopVariant is one way of running a task: bare wazero with no stop
// mechanism, or sandbox.Runtime in one interrupt mode. run returns the
// task's stdout.
type loopVariant struct {
	key string
	run func(wasmKey string, stdin []byte) ([]byte, error)
}

// LoopCost measures what forced-stop readiness costs compute: the shapes of
// testdata/loops_cmd.wat, the top-tested while loops of
// internal/testwasm/wat/bench_toploops.wat, the Go primes guest and the C
// kernels of internal/testwasm/ckernels (built with clang-14 here; left out,
// with a note, when it or wasi-libc is missing), each run as a whole task
// with no stop mechanism (bare wazero, close-on-context-done off, no
// rewrite), through sandbox.Runtime in wazero mode and in checks mode,
// interleaved, medians of wall time per task.
func LoopCost(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "loopcost"}
	samples := o.pick(9, 3)
	primes, err := goGuest(o, "primes")
	if err != nil {
		return nil, err
	}
	wasms := map[string][]byte{"loops": benchModule("loops_cmd"), "toploops": wat.MustLoad("bench_toploops"), "primes": primes}
	var kernels []ckernels.Kernel
	var noKernels error
	for _, k := range ckernels.Kernels {
		w, err := ckernels.Build(o.CacheDir, k.Name)
		if errors.Is(err, ckernels.ErrUnavailable) {
			noKernels = err
			o.logf("loopcost: no C kernels: %v", err)
			break
		}
		if err != nil {
			return nil, err
		}
		wasms["c/"+k.Name] = w
		kernels = append(kernels, k)
	}

	bare, err := NewBare(ctx, false, filepath.Join(o.CacheDir, "wazero", "bare-noclose"))
	if err != nil {
		return nil, err
	}
	defer bare.Close(ctx)
	if err := stubStintModule(ctx, bare.rt); err != nil {
		return nil, err
	}
	bareCM := map[string]wazero.CompiledModule{}
	for k, w := range wasms {
		if bareCM[k], err = bare.Compile(ctx, w); err != nil {
			return nil, err
		}
	}
	variants := []loopVariant{{key: "none", run: func(k string, stdin []byte) ([]byte, error) {
		return bare.Run(ctx, bareCM[k], stdin)
	}}}
	for _, mode := range sandbox.InterruptModes() {
		rt, err := sandbox.New(ctx, sandbox.Config{Interrupt: mode,
			CacheDir: filepath.Join(o.CacheDir, "sandbox-"+string(mode))})
		if err != nil {
			return nil, err
		}
		defer rt.Close(ctx)
		mods := map[string]*sandbox.Module{}
		for k, w := range wasms {
			if mods[k], err = rt.Compile(ctx, w); err != nil {
				return nil, err
			}
		}
		variants = append(variants, loopVariant{key: string(mode), run: func(k string, stdin []byte) ([]byte, error) {
			out, err := rt.Run(ctx, mods[k], sandbox.Spec{Stdin: bytes.NewReader(stdin)})
			if err != nil {
				return nil, err
			}
			if out.Kind != sandbox.KindSucceeded {
				return nil, fmt.Errorf("%s in %s mode: %s", k, mode, out)
			}
			return out.Stdout, nil
		}})
	}

	t := res.NewTable(fmt.Sprintf("Forced-stop readiness: ns per iteration (%d iterations per task), ms per primes or C kernel task", loopIters),
		"workload", "no mechanism (bare wazero)", "`wazero` mode", "`checks` mode", "wazero / none", "checks / none", "samples")
	type work struct {
		key, label, wasm string
		stdin            []byte
		per              float64 // divide the task's ns by this
		unit             string
	}
	var works []work
	for i, sh := range loopShapes {
		works = append(works, work{sh.key, sh.label + " (`" + sh.key + "`)", "loops", []byte{byte('0' + i)}, loopIters, "ns/iter"})
	}
	for i, sh := range topLoopShapes {
		works = append(works, work{sh.key, sh.label + " (`" + sh.key + "`)", "toploops", []byte{byte('0' + i)}, loopIters, "ns/iter"})
	}
	works = append(works, work{"primes", "Go guest `primes` (" + primesInput + "), whole task", "primes", []byte(primesInput), 1e6, "ms/task"})
	for _, k := range kernels {
		works = append(works, work{"c-" + k.Name, "C `" + k.Name + "`: " + k.Label + ", whole task", "c/" + k.Name, nil, 1e6, "ms/task"})
	}
	for _, w := range works {
		o.logf("loopcost: %s, %d samples per variant, interleaved", w.key, samples)
		s := make([]*Series, len(variants))
		for i, v := range variants {
			s[i] = res.NewSeries("loopcost/"+w.key+"/"+v.key, w.unit)
		}
		idx := []int{0, 1, 2}
		// want is the first run's stdout: every run prints the same.
		var want []byte
		for r := -1; r < samples; r++ { // one warm-up round
			for _, i := range rotate(idx, r) {
				start := time.Now()
				out, err := variants[i].run(w.wasm, w.stdin)
				if err != nil {
					return nil, fmt.Errorf("loopcost %s/%s: %w", w.key, variants[i].key, err)
				}
				if want == nil {
					want = bytes.Clone(out)
				} else if !bytes.Equal(out, want) {
					return nil, fmt.Errorf("loopcost %s/%s: output %q, another variant's %q", w.key, variants[i].key, out, want)
				}
				if r >= 0 {
					s[i].Values = append(s[i].Values, float64(time.Since(start).Nanoseconds())/w.per)
				}
			}
		}
		f := "%.2f"
		if w.unit == "ms/task" {
			f = "%.1f ms"
		}
		t.AddRow(w.label, fmt.Sprintf(f, s[0].Median()), fmt.Sprintf(f, s[1].Median()), fmt.Sprintf(f, s[2].Median()),
			ratio(s[1].Median(), s[0].Median()), ratio(s[2].Median(), s[0].Median()), fmt.Sprint(s[0].N()))
	}
	t.Notes = append(t.Notes, fmt.Sprintf("Medians of whole tasks run interleaved (order rotated every round): "+
		"internal/bench/testdata/loops_cmd.wat (stdin picks the shape; ns per iteration = task wall time / %d, "+
		"instantiation included, a few tens of µs) and the Go primes guest. \"No mechanism\" is bare wazero with "+
		"close-on-context-done off and no module rewrite (a stub stint host module); it cannot be stopped. "+
		"`wazero` mode: close-on-context-done (a trampoline to Go at every loop header) plus Stint's check at "+
		"function entries. `checks` mode: close-on-context-done off, Stint's check (global.get; if unreachable) "+
		"at every loop header and function entry. `top` and `topnested`: internal/testwasm/wat/bench_toploops.wat, "+
		"while loops tested at their top (block (loop (br_if 1 (cond)) ... (br 0)))). C kernels: "+
		"internal/testwasm/ckernels/src/*.c, built with clang-14 %s; every variant's stdout (a checksum) is "+
		"checked to be the same.", loopIters, strings.Join(ckernels.Flags, " ")))
	if noKernels != nil {
		t.Notes = append(t.Notes, "The C kernels were left out: "+noKernels.Error())
	}
	return res, nil
}

// stubStintModule instantiates a "stint" host module whose functions do
// nothing (no stop, no checkpoint), so that guests built for Stint run on
// bare wazero.
func stubStintModule(ctx context.Context, rt wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	b := rt.NewHostModuleBuilder(sandbox.HostModule)
	zero := api.GoModuleFunc(func(_ context.Context, _ api.Module, stack []uint64) {
		if len(stack) > 0 {
			stack[0] = 0
		}
	})
	for _, f := range []struct {
		name            string
		params, results []api.ValueType
	}{
		{"stop_requested", nil, []api.ValueType{i32}},
		{"checkpoint_save", []api.ValueType{i32, i32}, []api.ValueType{i32}},
		{"checkpoint_size", nil, []api.ValueType{i32}},
		{"checkpoint_load", []api.ValueType{i32, i32}, []api.ValueType{i32}},
		{"progress", []api.ValueType{i64, i64}, nil},
		{"deadline_ms", nil, []api.ValueType{i64}},
	} {
		b.NewFunctionBuilder().WithGoModuleFunction(zero, f.params, f.results).Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return errors.Join(err)
}
