package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// SubmitMany: tasks.Store.SubmitMany and tasks.ClaimingSubmitter's
// SubmitManyClaimed.

func testSubmitMany(t *testing.T, e *env) {
	res, err := e.s.SubmitMany(e.ctx, nil)
	require.NoError(t, err)
	require.Empty(t, res)

	before := e.submit(tasks.Spec{Module: e.module, IdempotencyKey: "old", Input: []byte("old input")})
	specs := []tasks.Spec{
		{Module: e.module, Input: []byte("zero"), Args: []string{"-n", "1"}, Queue: "q", Priority: 3,
			Labels: map[string]string{"job": "j"}, Env: map[string]string{"A": "b"}, Export: "greet",
			Limits: tasks.Limits{MemoryBytes: 1 << 20, Timeout: time.Second, Stderr: 512},
			Mounts: []tasks.Mount{{HostPath: "/srv/in", GuestPath: "/in"}, {HostPath: "/srv/out", GuestPath: "/out", Writable: true}}},
		{Module: e.module, IdempotencyKey: "old", Input: []byte("ignored")},
		{Module: e.module, IdempotencyKey: "k"},
		{Module: e.module},
		{Module: e.module, IdempotencyKey: "k", Input: []byte("ignored too")},
		{Module: e.module, Input: []byte{}, MaxAttempts: 7, RunAt: Start.Add(time.Hour)},
	}
	res, err = e.s.SubmitMany(e.ctx, specs)
	require.NoError(t, err)
	require.Len(t, res, len(specs))

	require.True(t, res[1].Existing, "a key used before returns its task")
	require.Equal(t, before, res[1].Task)
	require.True(t, res[4].Existing, "a key repeated in the call returns the first task")
	require.False(t, res[2].Existing)
	require.Equal(t, res[2].Task, res[4].Task)
	var created []int64
	for _, i := range []int{0, 2, 3, 5} {
		require.False(t, res[i].Existing, "spec %d", i)
		created = append(created, res[i].Task.ID)
		// As Submit returns it, and as stored.
		got := e.get(res[i].Task.ID)
		require.Equal(t, got, res[i].Task, "spec %d", i)
		require.Equal(t, tasks.StateQueued, got.State)
		require.Equal(t, len(specs[i].Input), got.InputSize)
	}
	require.True(t, slices.IsSorted(created), "ids ascend in the order of specs: %v", created)
	require.Greater(t, created[0], before.ID)
	require.Equal(t, []byte("zero"), res[0].Task.Input)
	require.Equal(t, []string{"-n", "1"}, res[0].Task.Args)
	require.Equal(t, "q", res[0].Task.Queue)
	require.Equal(t, 3, res[0].Task.Priority)
	require.Equal(t, map[string]string{"job": "j"}, res[0].Task.Labels)
	require.Equal(t, "greet", res[0].Task.Export)
	require.Equal(t, specs[0].Limits, res[0].Task.Limits)
	require.Equal(t, specs[0].Mounts, res[0].Task.Mounts)
	require.Empty(t, res[3].Task.Export, "no export: _start")
	require.Equal(t, tasks.DefaultQueue, res[3].Task.Queue)
	require.Equal(t, tasks.DefaultMaxAttempts, res[3].Task.MaxAttempts)
	requireTime(t, Start, res[3].Task.RunAt, "run_at defaults to now")
	require.Equal(t, 7, res[5].Task.MaxAttempts)
	requireTime(t, Start.Add(time.Hour), res[5].Task.RunAt, "run_at")
	require.Len(t, e.all(tasks.ListFilter{}), 5)

	// Again: every keyed spec exists now; unkeyed ones are new tasks.
	again, err := e.s.SubmitMany(e.ctx, specs[1:3])
	require.NoError(t, err)
	require.True(t, again[0].Existing && again[1].Existing)
	require.Equal(t, before.ID, again[0].Task.ID)
	require.Equal(t, res[2].Task.ID, again[1].Task.ID)

	// The tasks are claimable as any other.
	cl := e.claim("p", 10)
	require.ElementsMatch(t, []int64{before.ID, created[0], created[1], created[2]}, ids(cl))
}

func testSubmitManyInvalid(t *testing.T, e *env) {
	good := e.spec()
	_, err := e.s.SubmitMany(e.ctx, []tasks.Spec{good, good, {Module: e.module, MaxAttempts: -1}, good})
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.ErrorContains(t, err, "spec 2")

	missing := tasks.Spec{Module: fmt.Sprintf("%064x", 1)}
	_, err = e.s.SubmitMany(e.ctx, []tasks.Spec{good, missing, good})
	require.ErrorIs(t, err, tasks.ErrModuleNotFound)
	require.ErrorContains(t, err, "spec 1")

	keyed := tasks.Spec{Module: e.module, IdempotencyKey: "never"}
	_, err = e.s.SubmitMany(e.ctx, []tasks.Spec{keyed, {Module: "nope"}})
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.Empty(t, e.all(tasks.ListFilter{}), "a failed call stores nothing")
	// The key was not taken by the failed call.
	e.submit(keyed)

	// tasks.SubmitMany validates before it stores, whatever the store.
	_, err = tasks.SubmitMany(e.ctx, e.s, []tasks.Spec{good, {}})
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.ErrorContains(t, err, "spec 1")
	require.Len(t, e.all(tasks.ListFilter{}), 1)
}

// testSubmitManyLarge submits more tasks than a statement of a backend
// may hold, with inputs and keys, through tasks.SubmitMany.
func testSubmitManyLarge(t *testing.T, e *env) {
	const n, repeats = 1100, 50
	specs := make([]tasks.Spec, n)
	for i := range specs {
		specs[i] = tasks.Spec{Module: e.module, Input: fmt.Appendf(nil, "input %d", i),
			IdempotencyKey: fmt.Sprintf("key-%d", i%(n-repeats))} // the last ones repeat keys
	}
	res, err := tasks.SubmitMany(e.ctx, e.s, specs)
	require.NoError(t, err)
	require.Len(t, res, n)
	for i, r := range res {
		if i < n-repeats {
			require.False(t, r.Existing, "spec %d", i)
			require.Equal(t, specs[i].Input, r.Task.Input, "spec %d", i)
		} else {
			require.True(t, r.Existing, "spec %d", i)
			require.Equal(t, res[i-(n-repeats)].Task, r.Task, "spec %d", i)
		}
		require.Equal(t, specs[i].IdempotencyKey, r.Task.IdempotencyKey)
	}
	list := e.all(tasks.ListFilter{Limit: 1000})
	require.Len(t, list, n-repeats)
	for i, task := range list {
		require.Equal(t, res[i].Task.ID, task.ID)
	}
	require.Equal(t, []byte("input 1023"), e.get(res[1023].Task.ID).Input)

	// The same specs again (a backend may keep the statement of a full
	// chunk): every key is taken, every task the first call's.
	again, err := tasks.SubmitMany(e.ctx, e.s, specs)
	require.NoError(t, err)
	require.Len(t, again, n)
	for i, r := range again {
		require.True(t, r.Existing, "spec %d", i)
		require.Equal(t, res[i].Task.ID, r.Task.ID, "spec %d", i)
	}
	require.Len(t, e.all(tasks.ListFilter{Limit: 1000}), n-repeats)
}

// testSubmitManyConcurrent submits the same keys from several calls at
// once: each key makes one task.
func testSubmitManyConcurrent(t *testing.T, e *env) {
	const calls, keys = 4, 60
	results := make([][]tasks.Submitted, calls)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for c := range calls {
		wg.Go(func() {
			specs := make([]tasks.Spec, keys)
			for i := range specs {
				// Each call in its own order of keys.
				k := (i*(c+1) + c) % keys
				if c%2 == 1 {
					k = keys - 1 - i
				}
				specs[i] = tasks.Spec{Module: e.module, IdempotencyKey: fmt.Sprintf("k%d", k)}
			}
			results[c], errs[c] = e.s.SubmitMany(e.ctx, specs)
		})
	}
	wg.Wait()
	byKey := map[string]int64{}
	created := map[string]int{}
	for c := range calls {
		require.NoError(t, errs[c])
		for _, r := range results[c] {
			k := r.Task.IdempotencyKey
			if id, ok := byKey[k]; ok {
				require.Equal(t, id, r.Task.ID, "key %s", k)
			}
			byKey[k] = r.Task.ID
			if !r.Existing {
				created[k]++
			}
		}
	}
	require.Len(t, byKey, keys)
	for k := range byKey {
		require.Equal(t, 1, created[k], "key %s created once", k)
	}
	require.Len(t, e.all(tasks.ListFilter{}), keys)
}

// testSubmitManyAfterPrune: ids keep growing after the newest tasks were
// deleted (an id is never given twice), and a pruned key is free again.
func testSubmitManyAfterPrune(t *testing.T, e *env) {
	res, err := e.s.SubmitMany(e.ctx, []tasks.Spec{e.spec(), {Module: e.module, IdempotencyKey: "k"}})
	require.NoError(t, err)
	for _, r := range res {
		_, err := e.s.Cancel(e.ctx, r.Task.ID)
		require.NoError(t, err)
	}
	e.clock.Advance(time.Hour)
	n, err := e.s.Prune(e.ctx, e.clock.Now())
	require.NoError(t, err)
	require.Equal(t, 2, n)
	again, err := e.s.SubmitMany(e.ctx, []tasks.Spec{{Module: e.module, IdempotencyKey: "k"}, e.spec()})
	require.NoError(t, err)
	require.False(t, again[0].Existing, "a pruned task's key is free again")
	require.Greater(t, again[0].Task.ID, res[1].Task.ID, "ids are never given twice")
	require.Greater(t, again[1].Task.ID, again[0].Task.ID)
}

// testSubmitManyClaimed: a store that can (tasks.ClaimingSubmitter)
// stores new tasks already claimed, as a claim would have left them: no
// one else claims them, their lease is heartbeat, completed and taken
// over like a claimed task's; a task that existed is returned as it is.
func testSubmitManyClaimed(t *testing.T, e *env) {
	cs, ok := e.s.(tasks.ClaimingSubmitter)
	if !ok {
		t.Skipf("%T is not a tasks.ClaimingSubmitter", e.s)
	}
	_, err := cs.SubmitManyClaimed(e.ctx, []tasks.Spec{{Module: e.module}}, "", lease)
	require.Error(t, err, "an empty owner")
	_, err = cs.SubmitManyClaimed(e.ctx, []tasks.Spec{{Module: e.module}}, "p", 0)
	require.Error(t, err, "no lease")

	before := e.submit(tasks.Spec{Module: e.module, IdempotencyKey: "old"})
	res, err := cs.SubmitManyClaimed(e.ctx, []tasks.Spec{
		{Module: e.module, IdempotencyKey: "old"},
		{Module: e.module, Input: []byte("a"), Queue: "q", IdempotencyKey: "new"},
		{Module: e.module},
	}, "p", lease)
	require.NoError(t, err)
	require.Len(t, res, 3)
	require.True(t, res[0].Existing)
	require.Equal(t, before, res[0].Task, "an existing task is not claimed")
	for _, r := range res[1:] {
		require.False(t, r.Existing)
		got := e.get(r.Task.ID)
		require.Equal(t, got, r.Task, "as stored")
		require.Equal(t, tasks.StateRunning, got.State)
		require.Equal(t, 1, got.Attempt)
		require.Equal(t, "p", got.LeaseOwner)
		requireTime(t, Start.Add(lease), got.LeaseExpiry, "lease expiry")
		c := tasks.ClaimedOf(got)
		require.Equal(t, tasks.Lease{TaskID: got.ID, Owner: "p", Token: 1}, c.Lease)
	}
	require.Equal(t, []byte("a"), res[1].Task.Input)
	require.Equal(t, []int64{before.ID}, ids(e.claim("other", 10)), "only the queued task is claimable")

	lost, _, err := e.s.Heartbeat(e.ctx, []tasks.Lease{tasks.ClaimedOf(res[1].Task).Lease, tasks.ClaimedOf(res[2].Task).Lease}, lease)
	require.NoError(t, err)
	require.Empty(t, lost)

	e.clock.Advance(time.Second)
	require.NoError(t, e.complete(tasks.Completion{Lease: tasks.ClaimedOf(res[1].Task).Lease, State: tasks.StateSucceeded,
		Result: []byte("A"), Attempt: tasks.Attempt{EndedAt: e.clock.Now(), Outcome: "succeeded"}}))
	done := e.get(res[1].Task.ID)
	require.Equal(t, tasks.StateSucceeded, done.State)
	require.Equal(t, []byte("A"), done.Result)
	as := e.attempts(done.ID)
	require.Len(t, as, 1)
	require.Equal(t, "p", as[0].Owner)
	requireTime(t, Start, as[0].StartedAt, "the attempt started when the task was stored")

	// Its lease not renewed, the other task is taken over as a claimed one.
	e.clock.Advance(2 * lease)
	cl := e.claim("other", 10)
	require.ElementsMatch(t, []int64{before.ID, res[2].Task.ID}, ids(cl), "taken over once its lease expired (before's too)")
	for _, c := range cl {
		require.Equal(t, 2, c.Lease.Token)
	}
	as = e.attempts(res[2].Task.ID)
	require.Len(t, as, 1)
	require.Equal(t, "lost", as[0].Outcome)
}
