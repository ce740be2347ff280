package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// loopShape is one export of testdata/loops.wat.
type loopShape struct{ export, label string }

var loopShapes = []loopShape{
	{"sum", "tight loop: one add per back-edge"},
	{"sum_call", "call-heavy: a wasm call per iteration"},
	{"sum_x8", "unrolled: eight adds per back-edge"},
	{"sum_host", "host-call-heavy: a host function call per iteration"},
}

// LoopCost measures what close-on-context-done (which makes a forced stop
// possible) costs compute-heavy code: the same loops compiled with it on
// and off, called interleaved, in ns per iteration.
func LoopCost(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "loopcost"}
	const iters = 1 << 21
	samples := o.pick(9, 3)
	cache := filepath.Join(o.CacheDir, "wazero")
	on, err := NewBare(ctx, true, filepath.Join(cache, "bare-close"))
	if err != nil {
		return nil, err
	}
	defer on.Close(ctx)
	off, err := NewBare(ctx, false, filepath.Join(cache, "bare-noclose"))
	if err != nil {
		return nil, err
	}
	defer off.Close(ctx)

	t := res.NewTable(fmt.Sprintf("Forced-stop readiness: ns per iteration, %d iterations per call", iters),
		"loop shape", "close-on-ctx-done off", "on", "on / off", "samples")
	for _, sh := range loopShapes {
		var calls [2]func() (time.Duration, error)
		for i, b := range []*Bare{off, on} {
			cm, err := b.Compile(ctx, benchModule("loops"))
			if err != nil {
				return nil, err
			}
			inst, err := b.Instantiate(ctx, cm)
			if err != nil {
				return nil, err
			}
			defer inst.Close(ctx)
			fn := inst.ExportedFunction(sh.export)
			calls[i] = func() (time.Duration, error) {
				start := time.Now()
				r, err := fn.Call(ctx, iters)
				d := time.Since(start)
				if err == nil && r[0] != sumBelow(iters) {
					err = fmt.Errorf("%s(%d) = %d, want %d", sh.export, iters, r[0], sumBelow(iters))
				}
				return d, err
			}
		}
		o.logf("loopcost: %s, %d samples each, interleaved", sh.export, samples)
		s := [2]*Series{
			res.NewSeries("loopcost/"+sh.export+"/off", "ns/iter"),
			res.NewSeries("loopcost/"+sh.export+"/on", "ns/iter"),
		}
		for r := -1; r < samples; r++ { // one warm-up round
			for _, i := range rotate([]int{0, 1}, r) {
				d, err := calls[i]()
				if err != nil {
					return nil, err
				}
				if r >= 0 {
					s[i].Values = append(s[i].Values, float64(d.Nanoseconds())/iters)
				}
			}
		}
		t.AddRow(sh.label+" (`"+sh.export+"`)", fmt.Sprintf("%.2f", s[0].Median()), fmt.Sprintf("%.2f", s[1].Median()),
			ratio(s[1].Median(), s[0].Median()), fmt.Sprint(s[0].N()))
	}
	t.Notes = append(t.Notes, "Medians of interleaved calls (off, on, on, off, ...) of internal/bench/testdata/loops.wat, "+
		"bare wazero, one instance per runtime. With close-on-context-done, wazero's compiler puts at every loop "+
		"header a call to a trampoline that leaves the native code for Go to check whether the module was closed "+
		"(in Go, so that the goroutine can be preempted), then comes back: the same round trip as a host function "+
		"call. Function entries and straight-line code get nothing. So every loop iteration pays about one host "+
		"call: the less a loop does per back-edge, the larger the ratio; a loop that already calls the host "+
		"pays it once more.")
	return res, nil
}

// sumBelow is the sum of i for 0 <= i < n.
func sumBelow(n uint64) uint64 { return n * (n - 1) / 2 }
