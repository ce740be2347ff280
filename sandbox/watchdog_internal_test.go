package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkWatchRun is what the stop watchdog adds to every run: putting
// the run on the watched list and taking it off.
func BenchmarkWatchRun(b *testing.B) {
	ctx := context.Background()
	r, err := New(ctx, Config{})
	require.NoError(b, err)
	defer func() { _ = r.Close(ctx) }()
	hard, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	mod := &Module{SHA256: "x"}
	spec := &Spec{}
	lim := Limits{Timeout: time.Hour}
	st := &runState{hard: hard}
	b.ReportAllocs()
	for b.Loop() {
		r.watchRun(ctx, st, mod, spec, 0, lim)
		if r.unwatchRun(st) != nil {
			b.Fatal("abandoned")
		}
	}
}

// BenchmarkRunStateAlloc is the allocation of a run's state alone, for
// comparison (the watchdog's entry made it larger).
func BenchmarkRunStateAlloc(b *testing.B) {
	b.ReportAllocs()
	var sink *runState
	for b.Loop() {
		sink = &runState{}
	}
	_ = sink
}
