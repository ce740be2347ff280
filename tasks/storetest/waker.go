package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// tasks.Store.ListenWakeups: wake-ups for a runner when a write makes a
// task ready.

// wakeBound only ends a test whose wake-up never comes (it would hang);
// nothing here is timed.
const wakeBound = time.Minute

// listen starts listening for wake-ups, stopping when the test ends (stop
// must succeed), or skips the test when the store gives no channel: it
// has no wake-ups where the test runs (tasks/sqlite off Linux) and its
// runners poll.
func listen(t *testing.T, w tasks.Store) (<-chan struct{}, func()) {
	t.Helper()
	ch, stop, err := w.ListenWakeups()
	require.NoError(t, err)
	require.NotNil(t, stop)
	if ch == nil {
		require.NoError(t, stop())
		t.Skip("ListenWakeups gave no channel: the store has no wake-ups here")
	}
	stopped := false
	done := func() {
		t.Helper()
		if !stopped {
			stopped = true
			require.NoError(t, stop())
		}
	}
	t.Cleanup(done)
	return ch, done
}

// woken waits for a value on ch after what.
func woken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wakeBound):
		t.Fatalf("no wake-up after %s within %s", what, wakeBound)
	}
}

// testWakerWakes: the channel ListenWakeups returns gets a value after each
// write that makes a task ready: Submit, SubmitMany, Retry and Release (a runner
// listens so as not to wait for its next poll for them). Each write gets a
// listener of its own, started after the test's other writes, so that a
// wake-up they sent cannot stand in for it. (A listener may get a value of
// its own too: tasks/postgres gives one when it starts listening, for the
// notifications it missed before. The suite cannot tell it from the
// write's, values being coalesced, so with such a store this checks less.)
// The store itself writes here; in a runner, another process (the CLI,
// another runner) does, through a store of its own on the same data.
func testWakerWakes(t *testing.T, e *env) {
	var released []tasks.Lease
	for _, c := range []struct {
		what  string
		setup func() int64
		write func(id int64)
	}{
		{"Retry of a dead task", func() int64 { // first: the store holds no other task to claim
			task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 1})
			cl := e.claimOne("a", task.ID)
			require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateDead,
				Attempt: tasks.Attempt{Outcome: "failed", Counted: true}}))
			return task.ID
		}, func(id int64) {
			_, err := e.s.Retry(e.ctx, id)
			require.NoError(t, err)
		}},
		{"Submit", func() int64 { return 0 }, func(int64) { e.submit(e.spec()) }},
		{"SubmitMany", func() int64 { return 0 }, func(int64) {
			_, err := e.s.SubmitMany(e.ctx, []tasks.Spec{e.spec(), e.spec()})
			require.NoError(t, err)
		}},
		{"Retry of a cancelled task", func() int64 {
			task := e.submit(e.spec())
			_, err := e.s.Cancel(e.ctx, task.ID)
			require.NoError(t, err)
			return task.ID
		}, func(id int64) {
			_, err := e.s.Retry(e.ctx, id)
			require.NoError(t, err)
		}},
		{"Release of claimed tasks", func() int64 {
			e.submit(e.spec())
			released = released[:0]
			for _, cl := range e.claim("a", 100) { // every ready task, the one just submitted among them
				released = append(released, cl.Lease)
			}
			return 0
		}, func(int64) {
			require.NoError(t, e.s.Release(e.ctx, released))
		}},
	} {
		id := c.setup()
		ch, stop := listen(t, e.s)
		c.write(id)
		woken(t, ch, c.what)
		stop()
	}
}

// testWakerListenAgain: the func ListenWakeups returns stops listening
// (it returns nil), after which the store can listen again, and the new
// listener is woken (a runner that stops its pool and starts another).
func testWakerListenAgain(t *testing.T, e *env) {
	for i := range 3 {
		ch, stop := listen(t, e.s)
		e.submit(e.spec())
		woken(t, ch, fmt.Sprintf("a submit to listener %d", i+1))
		stop()
	}
}
