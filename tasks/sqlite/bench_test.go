package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// BenchmarkSubmit submits one trivial task per iteration, each in its own
// transaction.
func BenchmarkSubmit(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "stint.db"), sqlite.Options{})
	ctx := context.Background()
	h, err := s.PutModule(ctx, wasm)
	require.NoError(b, err)
	spec := tasks.Spec{Module: h, Input: []byte("input"), Args: []string{"x"}}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, _, err := s.Submit(ctx, spec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
}

// BenchmarkClaimComplete moves b.N trivial tasks through Claim (batch 64)
// and Complete (batch 64), one pool, as a worker pool running no-op
// guests would. The tasks are inserted in bulk before the timer starts.
func BenchmarkClaimComplete(b *testing.B) {
	const batch = 64
	path := filepath.Join(b.TempDir(), "stint.db")
	s := open(b, path, sqlite.Options{})
	ctx := context.Background()
	h, err := s.PutModule(ctx, wasm)
	require.NoError(b, err)
	// One ordinary task, copied N times with SQL (Submit is measured above).
	_, _, err = s.Submit(ctx, tasks.Spec{Module: h, Input: []byte("input"), Args: []string{"x"}})
	require.NoError(b, err)
	_, err = rawDB(b, path).Exec(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO tasks (module, input, args, env, mounts, limits, max_attempts, priority, queue,
			run_at, state, created_at, updated_at)
		SELECT module, input, args, env, mounts, limits, max_attempts, priority, queue,
			run_at, state, created_at, updated_at
		FROM tasks, n WHERE tasks.id = 1`, b.N+batch)
	require.NoError(b, err)

	req := tasks.ClaimRequest{Owner: "bench", Max: batch, Lease: time.Minute}
	cs := make([]tasks.Completion, 0, batch)
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		cl, err := s.Claim(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if len(cl) == 0 {
			b.Fatal("ran out of tasks")
		}
		cs = cs[:0]
		for _, c := range cl {
			cs = append(cs, tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte("ok"),
				Attempt: tasks.Attempt{Outcome: "succeeded"}})
		}
		errs, err := s.Complete(ctx, cs)
		if err != nil {
			b.Fatal(err)
		}
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		done += len(cl)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
}
