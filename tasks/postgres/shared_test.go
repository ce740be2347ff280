package postgres_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestConcurrentOwners: three runners (three Stores, each with its own
// connection pool) claim and complete 1,000 tasks of one schema in
// batches at once: each task is claimed once and completed once. Also
// with a server whose default isolation is serializable (the store's
// connections use read committed, which its statements rely on).
func TestConcurrentOwners(t *testing.T) {
	t.Parallel()
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		concurrentOwners(t, dsn(t))
	})
	t.Run("serializable", func(t *testing.T) {
		t.Parallel()
		concurrentOwners(t, dsnWith(t, "default_transaction_isolation", "serializable"))
	})
}

func concurrentOwners(t *testing.T, dsn string) {
	schema := newSchema(t)
	const n, owners = 1000, 3
	stores := make([]*postgres.Store, owners)
	for i := range stores {
		s, err := postgres.Open(t.Context(), dsn, postgres.Options{Schema: schema})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		stores[i] = s
	}
	ctx := t.Context()
	h := putModule(t, stores[0])
	want := map[int64]bool{}
	for range n {
		task, _, err := stores[0].Submit(ctx, tasks.Spec{Module: h})
		require.NoError(t, err)
		want[task.ID] = true
	}

	var (
		mu      sync.Mutex
		claimed = map[int64]string{} // task -> owner
		per     = map[string]int{}
	)
	run := func(s *postgres.Store, owner string) error {
		for {
			cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: owner, Max: 16, Lease: time.Minute})
			if err != nil {
				return err
			}
			if len(cl) == 0 {
				return nil
			}
			mu.Lock()
			for _, c := range cl {
				if prev, ok := claimed[c.Task.ID]; ok {
					mu.Unlock()
					return fmt.Errorf("task %d claimed by %s and %s", c.Task.ID, prev, owner)
				}
				claimed[c.Task.ID] = owner
				per[owner]++
			}
			mu.Unlock()
			cs := make([]tasks.Completion, len(cl))
			for i, c := range cl {
				cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded, Result: []byte(owner),
					Attempt: tasks.Attempt{Outcome: "succeeded"}}
			}
			errs, err := s.Complete(ctx, cs)
			if err != nil {
				return err
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
		}
	}
	start := make(chan struct{})
	errc := make(chan error, owners)
	for i, s := range stores {
		go func() {
			<-start
			errc <- run(s, fmt.Sprint("runner-", i))
		}()
	}
	close(start)
	for range owners {
		require.NoError(t, <-errc)
	}
	t.Logf("tasks per owner: %v", per)
	require.Len(t, claimed, n)
	list, err := stores[1].List(ctx, tasks.ListFilter{State: tasks.StateSucceeded, Limit: 2 * n})
	require.NoError(t, err)
	require.Len(t, list, n)
	for _, task := range list {
		require.True(t, want[task.ID])
		require.Equal(t, 1, task.Attempt)
		got, err := stores[2].Get(ctx, task.ID)
		require.NoError(t, err)
		require.Equal(t, claimed[task.ID], string(got.Result), "the result is the claiming owner's")
		as, err := stores[0].Attempts(ctx, task.ID)
		require.NoError(t, err)
		require.Len(t, as, 1, "one attempt per task")
		require.Equal(t, claimed[task.ID], as[0].Owner)
		require.Equal(t, "succeeded", as[0].Outcome)
	}
	var attempts int
	require.NoError(t, rawConn(t, schema).QueryRow(ctx, `SELECT count(*) FROM attempts`).Scan(&attempts))
	require.Zero(t, attempts, "first-try successes are kept in their task rows")
}

// TestRecoverOwn: a runner recovers the attempts it left running, at once
// and not counted, and leaves the other runners' running tasks alone.
func TestRecoverOwn(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a, b := open(t, schema, postgres.Options{}), open(t, schema, postgres.Options{})
	ctx := t.Context()
	h := putModule(t, a)
	for range 5 {
		_, _, err := a.Submit(ctx, tasks.Spec{Module: h, MaxAttempts: 1})
		require.NoError(t, err)
	}
	claim := func(s *postgres.Store, owner string, max int) []tasks.Claimed {
		t.Helper()
		cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: owner, Max: max, Lease: time.Hour})
		require.NoError(t, err)
		require.Len(t, cl, max)
		return cl
	}
	mine := claim(a, "runner-a", 3)
	theirs := claim(b, "runner-b", 2)
	require.NoError(t, a.SaveCheckpoint(ctx, mine[0].Lease, []byte("cp")))
	_, err := b.Cancel(ctx, mine[2].Task.ID)
	require.NoError(t, err)

	_, err = a.RecoverOwn(ctx, "", 0)
	require.Error(t, err, "an owner is required")
	n, err := a.RecoverOwn(ctx, "runner-a", 0)
	require.NoError(t, err)
	require.Equal(t, 3, n)

	for i, c := range mine {
		got, err := a.Get(ctx, c.Task.ID)
		require.NoError(t, err)
		require.Zero(t, got.Failures, "not counted")
		require.Empty(t, got.LeaseOwner)
		as, err := a.Attempts(ctx, c.Task.ID)
		require.NoError(t, err)
		require.Len(t, as, 1)
		require.Equal(t, "lost", as[0].Outcome)
		require.Equal(t, "runner-a", as[0].Owner)
		require.False(t, as[0].Counted)
		if i == 2 {
			require.Equal(t, tasks.StateCancelled, got.State, "its cancellation was requested")
		} else {
			require.Equal(t, tasks.StateQueued, got.State)
		}
		errs, err := a.Complete(ctx, []tasks.Completion{{Lease: c.Lease, State: tasks.StateSucceeded}})
		require.NoError(t, err)
		require.ErrorIs(t, errs[0], tasks.ErrStaleLease)
	}
	// runner-b's tasks still run under its leases, which still write.
	for _, c := range theirs {
		got, err := b.Get(ctx, c.Task.ID)
		require.NoError(t, err)
		require.Equal(t, tasks.StateRunning, got.State)
		require.Equal(t, "runner-b", got.LeaseOwner)
		as, err := b.Attempts(ctx, c.Task.ID)
		require.NoError(t, err)
		require.Empty(t, as)
		require.NoError(t, b.Progress(ctx, c.Lease, 1, 2))
	}
	// Claimable at once (MaxAttempts 1 not used up), with the checkpoint.
	again, err := b.Claim(ctx, tasks.ClaimRequest{Owner: "runner-a2", Max: 10, Lease: time.Hour})
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{mine[0].Task.ID, mine[1].Task.ID}, []int64{again[0].Task.ID, again[1].Task.ID})
	require.Len(t, again, 2)
	for _, c := range again {
		if c.Task.ID == mine[0].Task.ID {
			require.Equal(t, []byte("cp"), c.Checkpoint)
		}
	}
	n, err = a.RecoverOwn(ctx, "runner-a", 0)
	require.NoError(t, err)
	require.Zero(t, n)
}

// TestPruneOnce: Prune does nothing while another runner holds the
// schema's prune lock, and prunes once it is free.
func TestPruneOnce(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := open(t, schema, postgres.Options{})
	ctx := t.Context()
	h := putModule(t, s)
	task, _, err := s.Submit(ctx, tasks.Spec{Module: h})
	require.NoError(t, err)
	_, err = s.Cancel(ctx, task.ID)
	require.NoError(t, err)

	other := rawConn(t, schema)
	_, err = other.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.LockKey("prune", schema))
	require.NoError(t, err)
	n, err := s.Prune(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "another runner prunes")
	_, err = s.Get(ctx, task.ID)
	require.NoError(t, err)

	_, err = other.Exec(ctx, `SELECT pg_advisory_unlock($1)`, postgres.LockKey("prune", schema))
	require.NoError(t, err)
	n, err = s.Prune(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	_, err = s.Get(ctx, task.ID)
	require.ErrorIs(t, err, tasks.ErrNotFound)
	// The lock went back with the connection: another session takes it.
	var got bool
	require.NoError(t, other.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, postgres.LockKey("prune", schema)).Scan(&got))
	require.True(t, got)
}

// TestSpecBytes: what a spec may hold round-trips, NUL bytes in args, env
// values and mounts included (jsonb would refuse them) and any bytes of
// input.
func TestSpecBytes(t *testing.T) {
	t.Parallel()
	s := open(t, newSchema(t), postgres.Options{})
	ctx := t.Context()
	h := putModule(t, s)
	spec := tasks.Spec{Module: h, Args: []string{"a\x00b", "é\xff"}, Env: map[string]string{"K": "v\x00w"},
		Mounts: []tasks.Mount{{HostPath: "/h\x00", GuestPath: "/g"}}, Input: []byte{0, 1, 2, 0xff}}
	require.NoError(t, spec.Validate())
	task, _, err := s.Submit(ctx, spec)
	require.NoError(t, err)
	got, err := s.Get(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, task, got)
	require.Equal(t, []string{"a\x00b", "é\uFFFD"}, got.Args, "invalid UTF-8 becomes U+FFFD, as through encoding/json anywhere")
	require.Equal(t, spec.Env, got.Env)
	require.Equal(t, spec.Mounts, got.Mounts)
	require.Equal(t, spec.Input, got.Input)
}

// TestPruneAttempts: Prune deletes the attempt records of the tasks it
// deletes (no foreign key cascades since schema version 6), keeps those
// of tasks it keeps, and deletes the attempts an older runner's Prune
// left behind (their task deleted without them).
func TestPruneAttempts(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := open(t, schema, postgres.Options{})
	ctx := t.Context()
	h := putModule(t, s)
	var ids []int64
	for range 4 {
		task, _, err := s.Submit(ctx, tasks.Spec{Module: h, MaxAttempts: 3})
		require.NoError(t, err)
		ids = append(ids, task.ID)
	}
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "o", Max: 4, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 4)
	cs := make([]tasks.Completion, len(cl))
	for i, c := range cl {
		// With a reason: an attempts row (not kept in the task row, as
		// a plain first-try success is since schema version 8).
		cs[i] = tasks.Completion{Lease: c.Lease, State: tasks.StateSucceeded,
			Attempt: tasks.Attempt{Outcome: "succeeded", Reason: "ok"}}
	}
	// ids[2] fails and goes back to the queue: kept, with its attempt.
	for i := range cs {
		if cs[i].Lease.TaskID == ids[2] {
			cs[i] = tasks.Completion{Lease: cl[i].Lease, State: tasks.StateQueued, RunAt: time.Now().Add(time.Hour),
				Attempt: tasks.Attempt{Outcome: "failed", Counted: true}}
		}
	}
	errs, err := s.Complete(ctx, cs)
	require.NoError(t, err)
	require.NoError(t, errors.Join(errs...))
	// ids[1] deleted as an older Prune would: its attempt stays behind.
	raw := rawConn(t, schema)
	_, err = raw.Exec(ctx, `DELETE FROM tasks WHERE id = $1`, ids[1])
	require.NoError(t, err)
	left := func() (n int) {
		require.NoError(t, raw.QueryRow(ctx, `SELECT count(*) FROM attempts`).Scan(&n))
		return n
	}
	require.Equal(t, 4, left())

	n, err := s.Prune(ctx, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 2, n, "ids[0] and ids[3]")
	require.Equal(t, 1, left(), "only the attempt of the task kept")
	atts, err := s.Attempts(ctx, ids[2])
	require.NoError(t, err)
	require.Len(t, atts, 1)
	for _, id := range []int64{ids[0], ids[1], ids[3]} {
		_, err := s.Attempts(ctx, id)
		require.ErrorIs(t, err, tasks.ErrNotFound, "task %d", id)
	}
}
