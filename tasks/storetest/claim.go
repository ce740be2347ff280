package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Claim: the order of claims, the request's edges, run_at, queue maxima,
// what a claim carries inline, pools claiming at once.

func testClaimOrder(t *testing.T, e *env) {
	low1 := e.submit(e.spec())
	high1 := e.submit(tasks.Spec{Module: e.module, Priority: 5})
	low2 := e.submit(e.spec())
	high2 := e.submit(tasks.Spec{Module: e.module, Priority: 5})
	// Ready earlier (RunAt in the past) goes first among equal priorities.
	early := e.submit(tasks.Spec{Module: e.module, RunAt: Start.Add(-time.Hour)})
	neg := e.submit(tasks.Spec{Module: e.module, Priority: -1})

	cl := e.claim("pool-a", 2)
	require.Equal(t, []int64{high1.ID, high2.ID}, ids(cl))
	cl = append(cl, e.claim("pool-a", 10)...)
	require.Equal(t, []int64{high1.ID, high2.ID, early.ID, low1.ID, low2.ID, neg.ID}, ids(cl))
	require.Empty(t, e.claim("pool-a", 10), "nothing left")

	for _, c := range cl {
		require.Equal(t, tasks.StateRunning, c.Task.State)
		require.Equal(t, 1, c.Task.Attempt)
		require.Equal(t, tasks.Lease{TaskID: c.Task.ID, Owner: "pool-a", Token: 1}, c.Lease)
		require.Equal(t, "pool-a", c.Task.LeaseOwner)
		requireTime(t, Start.Add(lease), c.Task.LeaseExpiry, "lease expiry")
		require.Nil(t, c.Checkpoint)
		require.Equal(t, e.module, c.Task.Module)
		got := e.get(c.Task.ID)
		require.Equal(t, tasks.StateRunning, got.State)
		require.Equal(t, 1, got.Attempt)
		require.Equal(t, "pool-a", got.LeaseOwner)
	}
}

func testClaimEdges(t *testing.T, e *env) {
	e.submit(e.spec())
	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 0, Lease: lease})
	require.NoError(t, err)
	require.Empty(t, cl, "Max 0 claims nothing")
	cl, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 5, Lease: lease, Queues: map[string]int{}})
	require.NoError(t, err)
	require.Empty(t, cl, "an empty (non-nil) queue map claims nothing")
	cl, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 5, Lease: lease, Queues: map[string]int{tasks.DefaultQueue: 0}})
	require.NoError(t, err)
	require.Empty(t, cl, "a queue with maximum 0 claims nothing")
	_, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "", Max: 5, Lease: lease})
	require.Error(t, err, "an owner is required")
	_, err = e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 5})
	require.Error(t, err, "a lease is required")
	require.Len(t, e.claim("a", 5), 1)
}

func testRunAtDelay(t *testing.T, e *env) {
	later := e.submit(tasks.Spec{Module: e.module, RunAt: Start.Add(time.Minute), Priority: 10})
	now := e.submit(e.spec())
	cl := e.claimOne("a", now.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded}))
	require.Empty(t, e.claim("a", 10), "not ready before RunAt")
	e.clock.Advance(time.Minute - time.Microsecond)
	require.Empty(t, e.claim("a", 10), "not ready before RunAt")
	e.clock.Advance(time.Microsecond)
	e.claimOne("a", later.ID)
}

func testQueueMaxima(t *testing.T, e *env) {
	spec := func(q string) tasks.Spec { return tasks.Spec{Module: e.module, Queue: q} }
	a := e.submitN(4, spec("a"))
	b := e.submitN(4, spec("b"))
	c := e.submitN(4, spec("c"))
	claim := func(max int, queues map[string]int) []tasks.Claimed {
		t.Helper()
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: max, Lease: lease, Queues: queues})
		require.NoError(t, err)
		return cl
	}
	cl := claim(10, map[string]int{"a": 2, "b": 1})
	require.ElementsMatch(t, []int64{a[0].ID, a[1].ID, b[0].ID}, ids(cl))
	// The overall maximum caps the sum, in claim order across queues.
	cl = claim(2, map[string]int{"a": 10, "b": 10, "c": 10})
	require.Equal(t, []int64{a[2].ID, a[3].ID}, ids(cl))
	cl = claim(10, map[string]int{"b": 1, "nope": 5})
	require.Equal(t, []int64{b[1].ID}, ids(cl))
	cl = claim(10, nil)
	require.Equal(t, []int64{b[2].ID, b[3].ID, c[0].ID, c[1].ID, c[2].ID, c[3].ID}, ids(cl))
}

// testClaimManyDistinct: one claim of many tasks, each with its own
// input, arguments, environment, labels, idempotency key, export and
// tenant (some none), returns each task with its own, as Get does: a
// store that decodes every row of a claim through the same destinations
// must not hand one task another's fields. Twice: in order (no tenant
// named), then fairly (tenants).
func testClaimManyDistinct(t *testing.T, e *env) {
	for _, tenants := range []bool{false, true} {
		want := map[int64]tasks.Spec{}
		for i := range 7 {
			spec := e.spec()
			spec.Input = bytes.Repeat([]byte{byte('a' + i)}, i*3)
			if i%2 == 0 {
				spec.Args = []string{fmt.Sprint("arg", i), "x"}
				spec.Env = map[string]string{fmt.Sprint("K", i): fmt.Sprint("v", i)}
				spec.Labels = map[string]string{"n": fmt.Sprint(i)}
				spec.IdempotencyKey = fmt.Sprintf("key-%v-%d", tenants, i)
			}
			if i%3 == 0 {
				spec.Export = fmt.Sprint("fn", i)
			}
			if tenants && i%3 != 2 {
				spec.Tenant = fmt.Sprint("t", i%3)
			}
			spec.Priority = i % 2
			want[e.submit(spec).ID] = spec
		}
		cl := e.claim("a", 20)
		require.Len(t, cl, len(want))
		for _, c := range cl {
			w, got := want[c.Task.ID], e.get(c.Task.ID)
			for _, s := range []tasks.Spec{c.Task.Spec, got.Spec} {
				require.Equal(t, len(w.Input), len(s.Input), c.Task.ID)
				if len(w.Input) > 0 {
					require.Equal(t, w.Input, s.Input, c.Task.ID)
				}
				require.Equal(t, w.Args, s.Args, c.Task.ID)
				require.Equal(t, w.Env, s.Env, c.Task.ID)
				require.Equal(t, w.Labels, s.Labels, c.Task.ID)
				require.Equal(t, w.IdempotencyKey, s.IdempotencyKey, c.Task.ID)
				require.Equal(t, w.Export, s.Export, c.Task.ID)
				require.Equal(t, w.Tenant, s.Tenant, c.Task.ID)
				require.Equal(t, w.Priority, s.Priority, c.Task.ID)
			}
		}
		for _, c := range cl {
			require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded,
				Attempt: tasks.Attempt{Outcome: "succeeded"}}))
		}
	}
}

// testClaimInline: Claim returns inputs and checkpoints of up to
// tasks.ClaimInline bytes with their task and leaves larger ones out
// (Claimed.PayloadLeftOut), which Get and Checkpoint then return whole.
func testClaimInline(t *testing.T, e *env) {
	small, edge, large := []byte("in"), bytes.Repeat([]byte("e"), tasks.ClaimInline), bytes.Repeat([]byte("L"), tasks.ClaimInline+1)
	for _, c := range []struct {
		name string
		in   []byte
	}{{"small", small}, {"edge", edge}, {"none", nil}} {
		spec := e.spec()
		spec.Input = c.in
		cl := e.claimOne("a", e.submit(spec).ID)
		require.Equal(t, c.in, cl.Task.Input, c.name)
		require.Equal(t, len(c.in), cl.Task.InputSize, c.name)
		in, cp := cl.PayloadLeftOut()
		require.False(t, in, c.name)
		require.False(t, cp, c.name)
	}
	spec := e.spec()
	spec.Input = large
	id := e.submit(spec).ID
	cl := e.claimOne("a", id)
	require.Nil(t, cl.Task.Input)
	require.Equal(t, len(large), cl.Task.InputSize)
	in, _ := cl.PayloadLeftOut()
	require.True(t, in)
	require.True(t, bytes.Equal(large, e.get(id).Input), "Get returns it whole")

	// Checkpoints: one at the edge comes back with the claim, a larger one
	// is left out; an empty one is not nil.
	for _, c := range []struct {
		blob     []byte
		leftOut  bool
		describe string
	}{{[]byte{}, false, "empty"}, {edge, false, "edge"}, {large, true, "large"}} {
		task := e.submit(e.spec())
		cl := e.claimOne("a", task.ID)
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, c.blob))
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued,
			Attempt: tasks.Attempt{Outcome: "interrupted"}}))
		cl = e.claimOne("b", task.ID)
		require.Equal(t, len(c.blob), cl.Task.CheckpointSize, c.describe)
		_, cp := cl.PayloadLeftOut()
		require.Equal(t, c.leftOut, cp, c.describe)
		if c.leftOut {
			require.Nil(t, cl.Checkpoint, c.describe)
			got, err := e.s.Checkpoint(e.ctx, task.ID)
			require.NoError(t, err)
			require.True(t, bytes.Equal(c.blob, got), c.describe)
		} else {
			require.NotNil(t, cl.Checkpoint, c.describe)
			require.True(t, bytes.Equal(c.blob, cl.Checkpoint), c.describe)
		}
	}
}

// testConcurrentPools runs two pools (different owners) on the same tasks
// at once, one of them moving the clock past every lease now and then so
// that takeovers race with completions. Whatever the interleaving, no
// attempt is claimed twice, and every task succeeds exactly once.
func testConcurrentPools(t *testing.T, e *env) {
	concurrentPools(t, e, func(int) string { return "" })
}

// testConcurrentFairPools is testConcurrentPools with the tasks in three
// tenants, so that the pools claim fairly (fair.go).
func testConcurrentFairPools(t *testing.T, e *env) {
	concurrentPools(t, e, func(i int) string { return []string{"", "a", "b"}[i%3] })
}

// concurrentPools: two pools claim, checkpoint and complete 500 tasks
// (task i of tenant tenant(i)) at once, one of them letting every lease
// expire now and then: each task succeeds once, and its attempts say so.
func concurrentPools(t *testing.T, e *env, tenant func(i int) string) {
	const n = 500
	want := map[int64]bool{}
	for i := range n {
		want[e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1000, Tenant: tenant(i)}).ID] = true
	}

	var (
		mu        sync.Mutex
		claimed   = map[tasks.Lease]bool{} // every (task, owner, token) handed out
		tokens    = map[[2]int64]string{}  // (task, token) -> owner
		succeeded = map[int64]int{}        // task -> successful Completes
		stale     int
	)
	done := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(succeeded) == n
	}
	pool := func(owner string, advance bool) error {
		for round := 0; !done(); round++ {
			if round > 200*n {
				return errors.New("no progress")
			}
			cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: owner, Max: 16, Lease: time.Minute, LostLimit: 1000})
			if err != nil {
				return err
			}
			mu.Lock()
			for _, c := range cl {
				if c.Lease.Owner != owner || c.Lease.Token != c.Task.Attempt || !want[c.Task.ID] {
					mu.Unlock()
					return fmt.Errorf("bad claim %+v", c.Lease)
				}
				key := [2]int64{c.Task.ID, int64(c.Lease.Token)}
				if prev, ok := tokens[key]; ok {
					mu.Unlock()
					return fmt.Errorf("task %d attempt %d claimed by %s and %s", key[0], key[1], prev, owner)
				}
				tokens[key] = owner
				claimed[c.Lease] = true
			}
			mu.Unlock()
			if advance && round%7 == 3 {
				e.clock.Advance(2 * time.Minute) // every lease held now is expired
			}
			var cs []tasks.Completion
			for _, c := range cl {
				err := e.s.SaveCheckpoint(e.ctx, c.Lease, []byte(owner))
				if err != nil && !errors.Is(err, tasks.ErrStaleLease) {
					return err
				}
				cs = append(cs, tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte(owner),
					Attempt: tasks.Attempt{Outcome: "succeeded"}})
			}
			if len(cs) == 0 {
				continue
			}
			errs, err := e.s.Complete(e.ctx, cs)
			if err != nil {
				return err
			}
			mu.Lock()
			for i, err := range errs {
				switch {
				case err == nil:
					succeeded[cs[i].Lease.TaskID]++
				case errors.Is(err, tasks.ErrStaleLease):
					stale++
				default:
					mu.Unlock()
					return err
				}
			}
			mu.Unlock()
		}
		return nil
	}

	errc := make(chan error, 2)
	go func() { errc <- pool("pool-a", true) }()
	go func() { errc <- pool("pool-b", false) }()
	require.NoError(t, <-errc)
	require.NoError(t, <-errc)

	require.Len(t, succeeded, n)
	for id, count := range succeeded {
		require.Equal(t, 1, count, "task %d completed %d times", id, count)
	}
	for id := range want {
		got := e.get(id)
		require.Equal(t, tasks.StateSucceeded, got.State)
		require.Empty(t, got.LeaseOwner)
		as := e.attempts(id)
		require.Equal(t, got.Attempt, len(as), "one record per attempt")
		last := as[len(as)-1]
		require.Equal(t, "succeeded", last.Outcome)
		require.Equal(t, got.Result, []byte(last.Owner), "the result is the winning attempt's")
		for _, a := range as[:len(as)-1] {
			require.Equal(t, "lost", a.Outcome)
		}
	}
	t.Logf("%d attempts claimed, %d stale completions refused", len(claimed), stale)
}
