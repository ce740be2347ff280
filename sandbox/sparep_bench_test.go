package sandbox

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
)

// BenchmarkBusyPs measures what a free P buys while n guests spin in each
// interrupt mode, n = 1, 2 and 4 on GOMAXPROCS 2 (as on the 2-vCPU VM): how
// late a 2 ms timer fires, how long a garbage collection takes, and how long
// after its cancel each guest's Run returns. Checks mode keeps no spare P
// (GOMAXPROCS at least the guests running) and yields at interrupts
// (interrupt.go); STINT_SPARE_P=1 keeps one, to compare the two in
// separate runs of this benchmark:
//
//	go test ./sandbox -run XXX -bench BenchmarkBusyPs -benchtime 20x
//	STINT_SPARE_P=1 go test ./sandbox -run XXX -bench BenchmarkBusyPs -benchtime 20x
//
// (wazero mode keeps its spare P either way.) Each op starts n spinning
// guests, waits until all run, takes the three samples and stops them.
func BenchmarkBusyPs(b *testing.B) {
	for _, mode := range []InterruptMode{InterruptChecks, InterruptWazero} {
		rt, err := New(context.Background(), Config{Interrupt: mode})
		require.NoError(b, err)
		mod, err := rt.Compile(context.Background(), wat.MustLoad("shape_loop_br"))
		require.NoError(b, err)
		for _, n := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/guests=%d", mode, n), func(b *testing.B) {
				// 2 Ps, whatever an earlier run raised them to (a spare P
				// is never given back).
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
				var late, gc, stop []time.Duration
				for range b.N {
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan time.Time, n)
					started := make(chan struct{}, n)
					for range n {
						go func() {
							sig := &startSignal{ch: started}
							_, _ = rt.Run(ctx, mod, Spec{StderrTee: sig, Limits: Limits{Timeout: -1}})
							done <- time.Now()
						}()
					}
					for range n {
						<-started
					}
					t0 := time.Now()
					fired := make(chan time.Time, 1)
					time.AfterFunc(2*time.Millisecond, func() { fired <- time.Now() })
					late = append(late, (<-fired).Sub(t0)-2*time.Millisecond)
					t1 := time.Now()
					runtime.GC()
					gc = append(gc, time.Since(t1))
					t2 := time.Now()
					cancel()
					for range n {
						stop = append(stop, (<-done).Sub(t2))
					}
				}
				b.ReportMetric(float64(pct(late, 50).Microseconds()), "timer-late-p50-µs")
				b.ReportMetric(float64(pct(late, 99).Microseconds()), "timer-late-p99-µs")
				b.ReportMetric(float64(pct(gc, 50).Microseconds()), "gc-p50-µs")
				b.ReportMetric(float64(pct(gc, 99).Microseconds()), "gc-p99-µs")
				b.ReportMetric(float64(pct(stop, 50).Microseconds()), "stop-p50-µs")
				b.ReportMetric(float64(pct(stop, 99).Microseconds()), "stop-p99-µs")
			})
		}
		_ = rt.Close(context.Background())
	}
}

// startSignal says once on ch that the guest wrote to stderr (the shape
// fixtures write before they spin).
type startSignal struct {
	ch   chan struct{}
	sent bool
}

func (s *startSignal) Write(p []byte) (int, error) {
	if !s.sent {
		s.sent = true
		s.ch <- struct{}{}
	}
	return len(p), nil
}

// pct is the p-th percentile of xs.
func pct(xs []time.Duration, p int) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}
