package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// settle is how long a stop sample waits after the guest said it reached
// its blocking point, so that it is really blocked there when stopped.
const settle = time.Millisecond

// stopPath is one way a guest can be blocked, and how to stop it.
type stopPath struct {
	key, label string
	module     *sandbox.Module
	// spec builds the run's spec; ready must be closed (once) when the
	// guest reaches its blocking point; the returned func runs after Run
	// returned (to release what the sample held).
	spec func(ready func()) (sandbox.Spec, func())
	// soft stops through Spec.Stop instead of the hard context.
	soft bool
	want sandbox.Kind
}

// modePath is a stop path in one interrupt mode's runtime.
type modePath struct {
	mode sandbox.InterruptMode
	rt   *sandbox.Runtime
	stopPath
}

// StopLatency measures, per blocking path, the time from the stop (cancel
// of the hard context, or close of Spec.Stop for the cooperative path) to
// Run returning, paths sampled round-robin; then, through pool.Pool and a
// SQLite store, the time from the pool's stop to the attempt recorded.
func StopLatency(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "stop"}
	var (
		all []modePath
		rts = map[sandbox.InterruptMode]*sandbox.Runtime{}
	)
	for _, mode := range sandbox.InterruptModes() {
		rt, err := sandbox.New(ctx, sandbox.Config{Interrupt: mode})
		if err != nil {
			return nil, err
		}
		defer rt.Close(ctx)
		rts[mode] = rt
		paths, err := stopPaths(ctx, rt)
		if err != nil {
			return nil, err
		}
		for _, p := range paths {
			all = append(all, modePath{mode, rt, p})
		}
	}
	n := o.pick(200, 30)
	series := make([]*Series, len(all))
	for i, p := range all {
		series[i] = res.NewSeries("stop/"+string(p.mode)+"/"+p.key, "ns")
	}
	o.logf("stop: %d samples per path and mode, round-robin over %d", n, len(all))
	err := sampleRoundRobin(series, n, func(i int) (time.Duration, error) {
		d, err := stopOnce(ctx, all[i].rt, all[i].stopPath)
		if err != nil {
			return 0, fmt.Errorf("stop %s in %s mode: %w", all[i].key, all[i].mode, err)
		}
		return d, nil
	})
	if err != nil {
		return nil, err
	}
	t := res.NewTable("Stop latency: stop to Run returning, per interrupt mode",
		"blocking path", "mode", "p50 µs", "p99 µs", "max µs", "outcome", "samples")
	for i, p := range all {
		s := series[i]
		want := p.want
		if want == "" {
			want = sandbox.KindForced
		}
		t.AddRow(p.label, "`"+string(p.mode)+"`", us(s.Median()), us(s.P99()), us(s.Max()), string(want), fmt.Sprint(s.N()))
	}
	t.Notes = append(t.Notes, fmt.Sprintf("Each sample runs the guest in a fresh instance, waits until it reports "+
		"its blocking point (a line on stderr through Spec.StderrTee, the stdin Read, the SaveCheckpoint call) "+
		"plus %s, then cancels the hard context (or closes Spec.Stop) and times until Run returns. Every sample "+
		"checked its outcome kind. One sandbox.Runtime per interrupt mode (sandbox.interrupt); paths and modes "+
		"sampled round-robin in one run. stop_aware here is internal/bench/testdata/stop_aware_ready.wat: stop_aware "+
		"with a ready line; shape_recursion is internal/testwasm/wat/shape_recursion.wat (2^60 calls, no loop).", settle))
	if err := timeoutOvershoot(ctx, o, res, all); err != nil {
		return nil, err
	}
	if err := stopToRecorded(ctx, o, res, rts[sandbox.InterruptWazero]); err != nil {
		return nil, err
	}
	return res, nil
}

// overshootTimeout is the attempt timeout of timeoutOvershoot's runs.
const overshootTimeout = 20 * time.Millisecond

// timeoutOvershoot measures, per blocking path (the cooperative one
// aside) and mode, how long a guest outlives its attempt timeout: from
// Spec.Started + Limits.Timeout to Run returning, the outcome timed_out.
// Limits.Grace asks the guest to stop before the timeout; a guest that
// ignores it, as all these do, is forced at the timeout itself.
func timeoutOvershoot(ctx context.Context, o Options, res *Result, all []modePath) error {
	var paths []modePath
	for _, p := range all {
		if !p.soft {
			paths = append(paths, p)
		}
	}
	n := o.pick(100, 20)
	series := make([]*Series, len(paths))
	for i, p := range paths {
		series[i] = res.NewSeries("overshoot/"+string(p.mode)+"/"+p.key, "ns")
	}
	o.logf("stop: attempt timeout overshoot, %d samples per path and mode", n)
	err := sampleRoundRobin(series, n, func(i int) (time.Duration, error) {
		p := paths[i]
		spec, release := p.spec(func() {})
		spec.Limits.Timeout = overshootTimeout
		spec.Started = time.Now()
		out, err := p.rt.Run(ctx, p.module, spec)
		end := time.Now()
		if release != nil {
			release()
		}
		if err != nil {
			return 0, fmt.Errorf("timeout %s in %s mode: %w", p.key, p.mode, err)
		}
		if out.Kind != sandbox.KindTimedOut {
			return 0, fmt.Errorf("timeout %s in %s mode: outcome %s, want timed_out", p.key, p.mode, out)
		}
		return end.Sub(spec.Started.Add(overshootTimeout)), nil
	})
	if err != nil {
		return err
	}
	t := res.NewTable("Attempt timeout overshoot: the attempt's deadline to Run returning, per interrupt mode",
		"blocking path", "mode", "p50 µs", "p99 µs", "max µs", "outcome", "samples")
	for i, p := range paths {
		s := series[i]
		t.AddRow(p.label, "`"+string(p.mode)+"`", us(s.Median()), us(s.P99()), us(s.Max()), "timed_out", fmt.Sprint(s.N()))
	}
	t.Notes = append(t.Notes, fmt.Sprintf("Each sample runs the guest with Limits.Timeout %s (Spec.Started just before "+
		"Run) and times from Started + Timeout until Run returns; every outcome was timed_out. The soft stop "+
		"(Limits.Grace, before the timeout) is ignored by these guests: the hard stop at the timeout ends them. "+
		"Goal: under 100 ms.", overshootTimeout))
	return nil
}

// stopPaths are the blocking paths of StopLatency, compiled in rt.
func stopPaths(ctx context.Context, rt *sandbox.Runtime) ([]stopPath, error) {
	var err error
	compile := func(wasm []byte) *sandbox.Module {
		if err != nil {
			return nil
		}
		var m *sandbox.Module
		m, err = rt.Compile(ctx, wasm)
		return m
	}
	teeReady := func(ready func()) sandbox.Spec {
		return sandbox.Spec{StderrTee: writerFunc(func([]byte) { ready() })}
	}
	paths := []stopPath{
		{key: "loop", label: "tight loop (loop)", module: compile(wat.MustLoad("loop")),
			spec: func(ready func()) (sandbox.Spec, func()) { return teeReady(ready), nil }},
		{key: "stop_ignore", label: "call-heavy loop (stop_ignore)", module: compile(wat.MustLoad("stop_ignore")),
			spec: func(ready func()) (sandbox.Spec, func()) { return teeReady(ready), nil }},
		{key: "recursion", label: "recursion without a loop (shape_recursion)", module: compile(wat.MustLoad("shape_recursion")),
			spec: func(ready func()) (sandbox.Spec, func()) { return teeReady(ready), nil }},
		{key: "start", label: "start function that never returns (shape_start)", module: compile(wat.MustLoad("shape_start")),
			spec: func(ready func()) (sandbox.Spec, func()) { return teeReady(ready), nil }},
		{key: "sleep", label: "WASI sleep, poll_oneoff (sleep)", module: compile(wat.MustLoad("sleep")),
			spec: func(ready func()) (sandbox.Spec, func()) { return teeReady(ready), nil }},
		{key: "stdin", label: "stdin read from an io.Pipe (stdin)", module: compile(wat.MustLoad("stdin")),
			spec: func(ready func()) (sandbox.Spec, func()) {
				pr, pw := io.Pipe()
				return sandbox.Spec{Stdin: readerFunc(func(p []byte) (int, error) { ready(); return pr.Read(p) })},
					func() { _ = pw.Close() }
			}},
		{key: "checkpoint", label: "blocking host function (checkpoint)", module: compile(wat.MustLoad("checkpoint")),
			spec: func(ready func()) (sandbox.Spec, func()) {
				return sandbox.Spec{SaveCheckpoint: func(ctx context.Context, _ []byte) error {
					ready()
					<-ctx.Done()
					return ctx.Err()
				}}, nil
			}},
		{key: "cooperative", label: "cooperative: close Spec.Stop (stop_aware)", module: compile(benchModule("stop_aware_ready")),
			soft: true, want: sandbox.KindInterrupted,
			spec: func(ready func()) (sandbox.Spec, func()) { return teeReady(ready), nil }},
	}
	return paths, err
}

// sampleRoundRobin takes n samples of each path, one of each in turn (the
// order rotated every round, so none always goes first), after two
// warm-up rounds, into series[i] for path i.
func sampleRoundRobin(series []*Series, n int, sample func(i int) (time.Duration, error)) error {
	idx := make([]int, len(series))
	for i := range idx {
		idx[i] = i
	}
	for r := -2; r < n; r++ {
		for _, i := range rotate(idx, r) {
			d, err := sample(i)
			if err != nil {
				return err
			}
			if r >= 0 {
				series[i].AddDuration(d)
			}
		}
	}
	return nil
}

// stopOnce runs p once, stops it at its blocking point, and returns the
// time from the stop to Run's return.
func stopOnce(ctx context.Context, rt *sandbox.Runtime, p stopPath) (time.Duration, error) {
	readyCh := make(chan struct{})
	var once sync.Once
	ready := func() { once.Do(func() { close(readyCh) }) }
	spec, release := p.spec(ready)
	stop := make(chan struct{})
	spec.Stop = stop
	hard, cancel := context.WithCancel(ctx)
	defer cancel()

	type result struct {
		out *sandbox.Outcome
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		out, err := rt.Run(hard, p.module, spec)
		done <- result{out, err, time.Now()}
	}()
	select {
	case <-readyCh:
	case r := <-done:
		return 0, fmt.Errorf("guest ended before its blocking point: %v %v", r.out, r.err)
	case <-time.After(10 * time.Second):
		cancel()
		<-done
		return 0, fmt.Errorf("guest did not reach its blocking point in 10s")
	}
	time.Sleep(settle)
	start := time.Now()
	if p.soft {
		close(stop)
	} else {
		cancel()
	}
	r := <-done
	if release != nil {
		release()
	}
	if r.err != nil {
		return 0, r.err
	}
	want := p.want
	if want == "" {
		want = sandbox.KindForced
	}
	if r.out.Kind != want {
		return 0, fmt.Errorf("outcome %s, want %s", r.out, want)
	}
	return r.at.Sub(start), nil
}

// writerFunc is an io.Writer that calls f with every write.
type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// readerFunc is an io.Reader.
type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
