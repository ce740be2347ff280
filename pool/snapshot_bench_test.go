package pool_test

import (
	"bytes"
	"context"
	"flag"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

var snapshotRounds = flag.Int("snapshot.rounds", 3, "BenchmarkSnapshotCost: rounds of each variant")

// BenchmarkSnapshotCost measures what snapshots cost a guest with a large
// memory (issue 39, item 8): chase linking 240 MiB into one random cycle
// (its memory incompressible), run with background snapshots every
// 200 ms and without, interleaved, -count rounds. It reports the guest's
// pause per snapshot (the difference of the medians over the snapshots
// taken), the encoding and the SQLite write of one such snapshot (beside
// the guest), its size, and what they come to at the default interval of
// snapshots.every (30 s): the guest's slowdown and the background work.
// Then the same for a delta (what a later snapshot of the run stores: the
// last snapshot against the one before it, its pages hashed, appended to
// the stored whole), and the background work when every snapshot but an
// attempt's first is a delta.
//
//	go test -run '^$' -bench BenchmarkSnapshotCost -benchtime 1x -count 1 ./pool/ -args -snapshot.rounds 5
func BenchmarkSnapshotCost(b *testing.B) {
	wasm, err := ckernels.Build(testwasm.CacheDir(b), "chase")
	if err != nil {
		b.Skip(err)
	}
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{Resumable: true, CacheDir: testwasm.CompileCacheDir(b)})
	require.NoError(b, err)
	defer rt.Close(ctx)
	mod, err := rt.Compile(ctx, wasm)
	require.NoError(b, err)
	input := ckernels.ChaseInput(0, 240)
	lim := sandbox.Limits{MemoryBytes: 300 << 20, Timeout: 10 * time.Minute}
	const every = 200 * time.Millisecond
	var plain, snapped []time.Duration
	var perRun []int
	var last, prev *sandbox.Snapshot
	for range *snapshotRounds {
		out, err := rt.Run(ctx, mod, sandbox.Spec{Input: input, Limits: lim})
		require.NoError(b, err)
		require.Equal(b, sandbox.KindSucceeded, out.Kind, out.Message)
		plain = append(plain, out.Duration)
		n := 0
		out, err = rt.Run(ctx, mod, sandbox.Spec{Input: input, Limits: lim, SnapshotEvery: every,
			OnSnapshot: func(s *sandbox.Snapshot) { n++; prev, last = last, s }})
		require.NoError(b, err)
		require.Equal(b, sandbox.KindSucceeded, out.Kind, out.Message)
		snapped = append(snapped, out.Duration)
		perRun = append(perRun, n)
	}
	require.NotNil(b, last, "no snapshot was taken")
	med := func(d []time.Duration) time.Duration { d = slices.Clone(d); slices.Sort(d); return d[len(d)/2] }
	n := slices.Clone(perRun)
	slices.Sort(n)
	pause := (med(snapped) - med(plain)) / time.Duration(max(n[len(n)/2], 1))

	// The background work for the last (largest) snapshot: encode, then a
	// fenced write to a real SQLite store.
	t0 := time.Now()
	var buf bytes.Buffer
	require.NoError(b, last.Encode(&buf))
	encode := time.Since(t0)
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "stint.db"), sqlite.Options{Exclusive: true})
	require.NoError(b, err)
	defer store.Close()
	sha, err := store.PutModule(ctx, wasm)
	require.NoError(b, err)
	_, _, err = store.Submit(ctx, tasks.Spec{Module: sha})
	require.NoError(b, err)
	cl, err := store.Claim(ctx, tasks.ClaimRequest{Owner: "bench", Max: 1, Lease: time.Minute})
	require.NoError(b, err)
	t0 = time.Now()
	require.NoError(b, store.SaveSnapshot(ctx, cl[0].Lease, buf.Bytes(), tasks.SnapshotInfo{}))
	write := time.Since(t0)

	// The same snapshot as a delta after the one before it, appended.
	require.NotNil(b, prev, "a single snapshot per run: no delta to measure")
	var whole bytes.Buffer
	digest, err := prev.EncodeDelta(&whole, nil)
	require.NoError(b, err)
	require.NoError(b, store.SaveSnapshot(ctx, cl[0].Lease, whole.Bytes(), tasks.SnapshotInfo{}))
	t0 = time.Now()
	var delta bytes.Buffer
	_, err = last.EncodeDelta(&delta, digest)
	require.NoError(b, err)
	deltaEncode := time.Since(t0)
	t0 = time.Now()
	require.NoError(b, store.AppendSnapshot(ctx, cl[0].Lease, whole.Len(), delta.Bytes(), tasks.SnapshotInfo{}))
	deltaWrite := time.Since(t0)

	const interval = 30 * time.Second
	b.ReportMetric(float64(med(plain).Milliseconds()), "plain-ms")
	b.ReportMetric(float64(med(snapped).Milliseconds()), "snapped-ms")
	b.ReportMetric(float64(n[len(n)/2]), "snapshots/run")
	b.ReportMetric(float64(pause.Microseconds())/1000, "pause-ms/snapshot")
	b.ReportMetric(float64(encode.Milliseconds()), "encode-ms")
	b.ReportMetric(float64(write.Milliseconds()), "sqlite-write-ms")
	b.ReportMetric(float64(buf.Len())/(1<<20), "MiB")
	b.ReportMetric(100*pause.Seconds()/interval.Seconds(), "guest-%@30s")
	b.ReportMetric(100*(encode+write).Seconds()/interval.Seconds(), "background-%@30s")
	b.ReportMetric(float64(deltaEncode.Milliseconds()), "delta-encode-ms")
	b.ReportMetric(float64(deltaWrite.Milliseconds()), "delta-write-ms")
	b.ReportMetric(float64(delta.Len())/(1<<10), "delta-KiB")
	b.ReportMetric(100*(deltaEncode+deltaWrite).Seconds()/interval.Seconds(), "delta-background-%@30s")
}

// BenchmarkQueueSnapshotsOn measures the queue's throughput on short
// tasks (the noop fixture, 2,000 tasks, 2 workers, SQLite) with
// snapshots on (a resumable runtime, snapshots every 30 s, a store that
// keeps them) and off, interleaved, -snapshot.rounds rounds: a task
// shorter than the interval never takes one, so only the resumable code
// and the bookkeeping may cost.
//
//	go test -run '^$' -bench BenchmarkQueueSnapshotsOn -benchtime 1x -count 1 ./pool/ -args -snapshot.rounds 5
func BenchmarkQueueSnapshotsOn(b *testing.B) {
	ctx := context.Background()
	const n = 2000
	rate := func(on bool) float64 {
		store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "stint.db"), sqlite.Options{Exclusive: true})
		require.NoError(b, err)
		defer store.Close()
		sha := putFixture(b, store, "noop")
		specs := make([]tasks.Spec, n)
		for i := range specs {
			specs[i] = tasks.Spec{Module: sha}
		}
		_, err = store.SubmitMany(ctx, specs)
		require.NoError(b, err)
		rt, err := sandbox.New(ctx, sandbox.Config{Resumable: on, CacheDir: testwasm.CompileCacheDir(b)})
		require.NoError(b, err)
		defer rt.Close(ctx)
		cfg := pool.Config{Workers: 2, Poll: time.Millisecond}
		if on {
			cfg.SnapshotEvery = 30 * time.Second
		}
		pl, err := pool.New(store, rt, cfg)
		require.NoError(b, err)
		start := time.Now()
		require.NoError(b, pl.Start(ctx))
		for {
			counts, err := store.CountTasks(ctx)
			require.NoError(b, err)
			if counts.Total[tasks.StateSucceeded] == n {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(start)
		require.NoError(b, pl.Stop(ctx))
		return n / took.Seconds()
	}
	var off, on []float64
	for range *snapshotRounds {
		off = append(off, rate(false))
		on = append(on, rate(true))
	}
	med := func(v []float64) float64 { v = slices.Clone(v); slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(off), "off-tasks/s")
	b.ReportMetric(med(on), "on-tasks/s")
	b.ReportMetric(med(on)/med(off), "on/off")
}
