package storetest

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// What a client asks of a store about its health: tasks.Pinger (does
// the backend answer) and tasks.LockInspector (does a runner work the
// store).

// testPing: Ping returns nil while the backend answers: on a fresh store,
// again and again, and from several goroutines at once while another
// claims and completes (a readiness probe beside a working pool); it
// changes nothing in the store.
func testPing(t *testing.T, e *env) {
	p := capability[tasks.Pinger](t, e)
	require.NoError(t, p.Ping(e.ctx))
	require.NoError(t, p.Ping(e.ctx), "a second time")

	e.submitN(20, e.spec())
	before := e.all(tasks.ListFilter{})
	require.NoError(t, p.Ping(e.ctx))
	require.Equal(t, before, e.all(tasks.ListFilter{}), "a ping changes nothing")

	var wg sync.WaitGroup
	errs := make(chan error, 4*10)
	for range 4 {
		wg.Go(func() {
			for range 10 {
				errs <- p.Ping(e.ctx)
			}
		})
	}
	for range 20 {
		cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "a", Max: 1, Lease: lease})
		require.NoError(t, err)
		require.Len(t, cl, 1)
		es, err := e.s.Complete(e.ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded,
			Attempt: tasks.Attempt{Outcome: "succeeded"}}})
		require.NoError(t, err)
		require.NoError(t, es[0])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// testLockHolder: LockHolder says whether a process holds the store's
// exclusive lock, and which, without taking the lock. An error means the
// holder is not known where the test runs (tasks/sqlite off Linux): the
// test then skips. Only this process has the suite's store open, so a
// holder can only be this process (a store opened exclusively); the
// answer does not change as the store is used, and asking takes no lock:
// the store keeps working.
func testLockHolder(t *testing.T, e *env) {
	li := capability[tasks.LockInspector](t, e)
	pid, held, err := li.LockHolder()
	if err != nil {
		t.Skipf("the lock holder is not known here: %v", err)
	}
	if held {
		require.Equal(t, os.Getpid(), pid, "the holder is the process that opened the store")
	}
	check := func(what string) {
		t.Helper()
		p, h, err := li.LockHolder()
		require.NoError(t, err, what)
		require.Equal(t, held, h, what)
		if held {
			require.Equal(t, pid, p, what)
		}
	}
	check("asked again")
	task := e.submit(e.spec())
	check("after a submit")
	cl := e.claimOne("a", task.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	require.Equal(t, tasks.StateSucceeded, e.get(task.ID).State)
	check("after a claim and a completion")
}
