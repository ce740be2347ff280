package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Options are shared by every benchmark.
type Options struct {
	// Quick runs few samples: a smoke test that finishes in seconds.
	Quick bool
	// Runner is the path of the built runner binary (for Shutdown).
	Runner string
	// BaseRunner, when set, is another runner binary (an earlier build)
	// that Batch runs in the same rounds as Runner, for a before/after
	// ratio. Default: none.
	BaseRunner string
	// RepoRoot is the repository's root directory (to find and build the
	// Go guests).
	RepoRoot string
	// CacheDir holds wazero's compilation cache and built guests between
	// runs. Default: $STINT_TEST_CACHE/bench, or stint-bench in the
	// temporary directory.
	CacheDir string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// WithDefaults fills the zero fields.
func (o Options) WithDefaults() Options {
	if o.CacheDir == "" {
		if d := os.Getenv("STINT_TEST_CACHE"); d != "" {
			o.CacheDir = filepath.Join(d, "bench")
		} else {
			o.CacheDir = filepath.Join(os.TempDir(), "stint-bench")
		}
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Runner == "" {
		o.Runner = filepath.Join(o.RepoRoot, "bin", "runner")
	}
	return o
}

// pick returns quick in quick mode and full otherwise.
func (o Options) pick(full, quick int) int {
	if o.Quick {
		return quick
	}
	return full
}

// pickDur is pick for durations.
func (o Options) pickDur(full, quick time.Duration) time.Duration {
	if o.Quick {
		return quick
	}
	return full
}

func (o Options) logf(format string, a ...any) {
	fmt.Fprintf(o.Log, "  "+format+"\n", a...)
}

// Benchmark is one of the benchmarks stintbench runs.
type Benchmark struct {
	// Name is what -only selects.
	Name string
	// Title heads its section of the output.
	Title string
	Run   func(ctx context.Context, o Options) (*Result, error)
	// Own marks a benchmark with a block of its own in the report
	// (benchreport's block of the same name): stintbench runs it only
	// when -only names it, so that the stint block does not repeat it.
	Own bool
}

// All lists the benchmarks in the order stintbench runs them.
var All = []Benchmark{
	{Name: "pertask", Title: "1. Per-task cost", Run: PerTask},
	{Name: "stop", Title: "2. Stop latency", Run: StopLatency},
	{Name: "durable", Title: "3. Durable throughput and latency", Run: Durable},
	{Name: "loopcost", Title: "4. Cost of forced-stop readiness", Run: LoopCost},
	{Name: "shutdown", Title: "5. Shutdown of runner serve", Run: Shutdown},
	{Name: "batch", Title: "9. runner batch: files/s", Run: Batch},
	{Name: "gc", Title: "7. Garbage collector settings", Run: GC},
	{Name: "snapshots", Title: "Snapshots: a long task's cost and the queue's short tasks", Run: Snapshots, Own: true},
}
