package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
	"github.com/stint-run/stint/tasks/storetest"
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

// minFilled is the fewest tasks filledStore inserts, so that the store is
// the same size for any b.N up to it (runs with different -benchtime
// counts then differ by the iterations alone).
const minFilled = 1 << 15

// filledStore opens a store holding max(n, minFilled) ordinary queued
// tasks, inserted in bulk with SQL (Submit is measured above).
func filledStore(b *testing.B, n int) *sqlite.Store {
	b.Helper()
	n = max(n, minFilled)
	path := filepath.Join(b.TempDir(), "stint.db")
	s := open(b, path, sqlite.Options{})
	ctx := context.Background()
	h, err := s.PutModule(ctx, wasm)
	require.NoError(b, err)
	_, _, err = s.Submit(ctx, tasks.Spec{Module: h, Input: []byte("input"), Args: []string{"x"}})
	require.NoError(b, err)
	_, err = rawDB(b, path).Exec(`
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
		INSERT INTO tasks (module, input_size, args, env, mounts, limits, max_attempts, priority, queue,
			run_at, state, created_at, updated_at)
		SELECT module, input_size, args, env, mounts, limits, max_attempts, priority, queue,
			run_at, state, created_at, updated_at
		FROM tasks, n WHERE tasks.id = 1`, n-1)
	require.NoError(b, err)
	_, err = rawDB(b, path).Exec(`INSERT INTO inputs (task_id, blob) SELECT t.id, i.blob FROM tasks t, inputs i WHERE i.task_id = 1 AND t.id > 1`)
	require.NoError(b, err)
	return s
}

// claimComplete claims with req and completes every claimed task as
// succeeded; it returns how many tasks it moved.
func claimComplete(b *testing.B, s *sqlite.Store, req tasks.ClaimRequest, cs []tasks.Completion) ([]tasks.Completion, int) {
	return claimCompleteCtx(b, background, s, req, cs)
}

// background is a context that never ends.
func background() (context.Context, context.CancelFunc) { return context.Background(), func() {} }

// withTimeout is a context that ends, as the worker pool's.
func withTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), time.Minute)
}

// claimCompleteCtx is claimComplete with each call's context from newCtx.
func claimCompleteCtx(b *testing.B, newCtx func() (context.Context, context.CancelFunc), s *sqlite.Store,
	req tasks.ClaimRequest, cs []tasks.Completion) ([]tasks.Completion, int) {
	ctx, cancel := newCtx()
	defer cancel()
	cl, err := s.Claim(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if len(cl) == 0 {
		b.Fatal("ran out of tasks")
	}
	cs = succeeded(cs, cl)
	ctx, cancel = newCtx()
	defer cancel()
	completeAll(b, ctx, s, cs)
	return cs, len(cl)
}

// succeeded empties cs and fills it with a succeeded completion (result
// "ok") of each task of cl.
func succeeded(cs []tasks.Completion, cl []tasks.Claimed) []tasks.Completion {
	cs = cs[:0]
	for _, c := range cl {
		cs = append(cs, tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte("ok"),
			Attempt: tasks.Attempt{Outcome: "succeeded"}})
	}
	return cs
}

// completeAll completes cs on s, failing b on an error of the call or of
// any completion.
func completeAll(b *testing.B, ctx context.Context, s *sqlite.Store, cs []tasks.Completion) {
	errs, err := s.Complete(ctx, cs)
	if err != nil {
		b.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimComplete moves b.N trivial tasks through Claim (batch 64)
// and Complete (batch 64), one pool, as a worker pool running no-op
// guests would. The tasks are inserted in bulk before the timer starts.
func BenchmarkClaimComplete(b *testing.B) {
	const batch = 64
	benchClaimComplete(b, filledStore(b, b.N+batch), batch)
}

// benchClaimComplete moves b.N tasks of s through claimComplete in
// batches of batch, timed, and reports the tasks moved per second.
func benchClaimComplete(b *testing.B, s *sqlite.Store, batch int) {
	req := tasks.ClaimRequest{Owner: "bench", Max: batch, Lease: time.Minute}
	cs := make([]tasks.Completion, 0, batch)
	b.ResetTimer()
	start := time.Now()
	for done := 0; done < b.N; {
		var n int
		cs, n = claimComplete(b, s, req, cs)
		done += n
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tasks/s")
}

// BenchmarkClaimTenants is BenchmarkClaimComplete (batches of 64, and of
// 2 as a pool with few free workers claims) with the tasks spread over
// tenants: none (the ordered claim), or 1, 2 or 100 named tenants (the
// fair claim, tasks/fair.go): what fairness costs a claim.
func BenchmarkClaimTenants(b *testing.B) {
	for _, batch := range []int{64, 2} {
		for _, k := range []int{0, 1, 2, 100} {
			b.Run(fmt.Sprintf("batch=%d/tenants=%d", batch, k), func(b *testing.B) {
				s := filledStore(b, b.N+batch)
				if k > 0 {
					_, err := rawDB(b, s.Path()).Exec(`UPDATE tasks SET tenant = 't' || (id % ?)`, k)
					require.NoError(b, err)
				}
				benchClaimComplete(b, s, batch)
			})
		}
	}
}

// BenchmarkClaimSmall is one Claim and one Complete of 1 to 3 tasks per
// iteration (a pool with few free slots), with the claim's Max the same on
// every call (constant) or cycling 1, 2, 3 (varying), over all queues or
// one named queue (queue-), each call with a context that never ends or,
// as the worker pool's calls, with a timeout (-timeout). Its ns/op is the
// cost of one small claim and complete pair.
func BenchmarkClaimSmall(b *testing.B) {
	for _, name := range []string{"constant", "varying", "queue-constant", "queue-varying", "varying-timeout"} {
		b.Run(name, func(b *testing.B) {
			s := filledStore(b, 3*b.N+3)
			cs := make([]tasks.Completion, 0, 3)
			newCtx := background
			if strings.HasSuffix(name, "-timeout") {
				newCtx = withTimeout
			}
			b.ResetTimer()
			for i := range b.N {
				max := 2
				if strings.Contains(name, "varying") {
					max = 1 + i%3
				}
				req := tasks.ClaimRequest{Owner: "bench", Max: max, Lease: time.Minute}
				if strings.HasPrefix(name, "queue-") {
					req.Queues = map[string]int{tasks.DefaultQueue: max}
				}
				cs, _ = claimCompleteCtx(b, newCtx, s, req, cs)
			}
		})
	}
}

// BenchmarkClaimEmpty is a Claim that finds nothing to claim (an idle
// pool polling the queue), with minFilled tasks running.
func BenchmarkClaimEmpty(b *testing.B) {
	s := filledStore(b, 0)
	ctx := context.Background()
	for {
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "bench", Max: 1000, Lease: time.Hour})
		require.NoError(b, err)
		if len(cl) == 0 {
			break
		}
	}
	b.ResetTimer()
	for i := range b.N {
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "bench", Max: 1 + i%4, Lease: time.Minute})
		if err != nil || len(cl) != 0 {
			b.Fatal(err, len(cl))
		}
	}
}

// BenchmarkCompleteBatch completes batches of n tasks claimed beforehand
// (the claims are outside the timer): the cost of Complete alone.
func BenchmarkCompleteBatch(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := filledStore(b, n*b.N+n)
			ctx := context.Background()
			cs := make([]tasks.Completion, 0, n)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "bench", Max: n, Lease: time.Minute})
				if err != nil || len(cl) != n {
					b.Fatal(err, len(cl))
				}
				cs = succeeded(cs, cl)
				b.StartTimer()
				completeAll(b, ctx, s, cs)
			}
		})
	}
}

// BenchmarkLargePayload is the life of one task whose input and result are
// size bytes each: Submit, a Claim, a Heartbeat, a Progress write and a
// Complete. written-bytes/task is what the process passed to write(2) per
// task (the WAL, and the checkpoints into the database file), from
// /proc/self/io on Linux.
func BenchmarkLargePayload(b *testing.B) {
	for _, size := range []int{16, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "stint.db")
			s := open(b, path, sqlite.Options{})
			ctx := context.Background()
			h, err := s.PutModule(ctx, wasm)
			require.NoError(b, err)
			payload := []byte(strings.Repeat("x", size))
			written := writtenBytes()
			b.ResetTimer()
			for b.Loop() {
				if _, _, err := s.Submit(ctx, tasks.Spec{Module: h, Input: payload}); err != nil {
					b.Fatal(err)
				}
				cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "bench", Max: 1, Lease: time.Minute})
				if err != nil || len(cl) != 1 {
					b.Fatal(err, len(cl))
				}
				if _, _, err := s.Heartbeat(ctx, []tasks.Lease{cl[0].Lease}, time.Minute); err != nil {
					b.Fatal(err)
				}
				if err := s.Progress(ctx, cl[0].Lease, 1, 2); err != nil {
					b.Fatal(err)
				}
				errs, err := s.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded,
					Result: payload, Attempt: tasks.Attempt{Outcome: "succeeded"}}})
				if err != nil || errs[0] != nil {
					b.Fatal(err, errs)
				}
			}
			b.StopTimer()
			if w := writtenBytes(); w > 0 {
				b.ReportMetric(float64(w-written)/float64(b.N), "written-bytes/task")
			}
		})
	}
}

// writtenBytes is the bytes this process passed to write(2) so far (wchar
// in /proc/self/io), or 0 where that is not known.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkListLargePayload lists 100 tasks whose input and result are
// 256 KiB each (tasks list, GET /v1/tasks).
func BenchmarkListLargePayload(b *testing.B) {
	path := filepath.Join(b.TempDir(), "stint.db")
	s := open(b, path, sqlite.Options{})
	ctx := context.Background()
	h, err := s.PutModule(ctx, wasm)
	require.NoError(b, err)
	payload := []byte(strings.Repeat("x", 256<<10))
	for range 100 {
		_, _, err := s.Submit(ctx, tasks.Spec{Module: h, Input: payload})
		require.NoError(b, err)
	}
	for {
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "bench", Max: 100, Lease: time.Minute})
		require.NoError(b, err)
		if len(cl) == 0 {
			break
		}
		cs := make([]tasks.Completion, len(cl))
		for i, c := range cl {
			cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: payload, Attempt: tasks.Attempt{Outcome: "succeeded"}}
		}
		_, err = s.Complete(ctx, cs)
		require.NoError(b, err)
	}
	b.ResetTimer()
	for b.Loop() {
		ts, err := s.List(ctx, tasks.ListFilter{Limit: 100})
		if err != nil || len(ts) != 100 {
			b.Fatal(err, len(ts))
		}
	}
}

// BenchmarkSubmitMany: 1000 tasks by one Submit each against one
// SubmitMany (storetest.BenchmarkSubmitMany), with each Sync setting.
func BenchmarkSubmitMany(b *testing.B) {
	for _, sync := range []sqlite.Sync{sqlite.SyncNormal, sqlite.SyncFull} {
		b.Run(string(sync), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "stint.db"), sqlite.Options{Sync: sync})
			h, err := s.PutModule(context.Background(), wasm)
			require.NoError(b, err)
			storetest.BenchmarkSubmitMany(b, s, h)
		})
	}
}

// BenchmarkCompleteCounted is BenchmarkClaimComplete with the triggers
// that keep the count of succeeded tasks by queue (schema version 6) and,
// for comparison, with them dropped: the cost of true counts on the
// completion path. Run both in one invocation (-count N interleaves them).
func BenchmarkCompleteCounted(b *testing.B) {
	for _, variant := range []string{"triggers", "none"} {
		b.Run(variant, func(b *testing.B) {
			const batch = 64
			s := filledStore(b, b.N+batch)
			if variant == "none" {
				path := s.Path()
				for _, tr := range []string{"tasks_succeeded_in", "tasks_succeeded_out", "tasks_succeeded_insert", "tasks_succeeded_delete"} {
					_, err := rawDB(b, path).Exec(`DROP TRIGGER ` + tr)
					require.NoError(b, err)
				}
			}
			benchClaimComplete(b, s, batch)
		})
	}
}

// BenchmarkSchedulerIdle is what a runner's scheduler tick reads when no
// schedule is due: 5 schedules, paused or waiting for their next period,
// each with a task input of 8 MiB. "due" is the tick since schema version
// 12 (tasks.FireSchedules: DueSchedules, no spec); "all" reads every
// schedule with its spec, as the tick did before:
//
//	go test ./tasks/sqlite -run XXX -bench BenchmarkSchedulerIdle -benchtime 20x
func BenchmarkSchedulerIdle(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "stint.db"), sqlite.Options{})
	ctx := context.Background()
	h, err := s.PutModule(ctx, wasm)
	require.NoError(b, err)
	spec := tasks.Spec{Module: h, Input: []byte(strings.Repeat("x", 8<<20))}
	for i := range 5 {
		_, err := s.AddSchedule(ctx, tasks.Schedule{Name: fmt.Sprint("s", i), Every: time.Hour, Paused: i < 3, Spec: spec})
		require.NoError(b, err)
	}
	now := time.Now()
	_, err = tasks.FireSchedules(ctx, s, now, s.Submit) // defers the two unpaused ones
	require.NoError(b, err)
	b.Run("due", func(b *testing.B) {
		for b.Loop() {
			if _, err := tasks.FireSchedules(ctx, s, now, s.Submit); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Schedules(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
