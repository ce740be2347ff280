package storetest

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// Listing: List and its filters and paging, what it leaves out,
// Attempts.

func testList(t *testing.T, e *env) {
	a := e.submitN(5, tasks.Spec{Module: e.module, Queue: "a"})
	b := e.submitN(5, tasks.Spec{Module: e.module, Queue: "b"})
	cl := e.claim("p", 3) // a[0..2]
	require.NoError(t, e.complete(tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded}))
	_, err := e.s.Cancel(e.ctx, b[4].ID)
	require.NoError(t, err)

	list := func(f tasks.ListFilter) []int64 {
		t.Helper()
		ts, err := e.s.List(e.ctx, f)
		require.NoError(t, err)
		return taskIDs(ts)
	}
	require.Equal(t, taskIDs(append(append([]tasks.Task{}, a...), b...)), list(tasks.ListFilter{}))
	require.Equal(t, []int64{a[1].ID, a[2].ID}, list(tasks.ListFilter{State: tasks.StateRunning}))
	require.Equal(t, []int64{a[0].ID}, list(tasks.ListFilter{State: tasks.StateSucceeded}))
	require.Equal(t, []int64{b[4].ID}, list(tasks.ListFilter{State: tasks.StateCancelled}))
	require.Empty(t, list(tasks.ListFilter{State: tasks.StateDead}))
	require.Equal(t, []int64{a[3].ID, a[4].ID, b[0].ID, b[1].ID, b[2].ID, b[3].ID}, list(tasks.ListFilter{State: tasks.StateQueued}))
	require.Equal(t, taskIDs(b), list(tasks.ListFilter{Queue: "b"}))
	require.Equal(t, []int64{a[3].ID, a[4].ID}, list(tasks.ListFilter{Queue: "a", State: tasks.StateQueued}))

	// Paging.
	var pages [][]int64
	after := int64(0)
	for {
		page := list(tasks.ListFilter{AfterID: after, Limit: 3})
		if len(page) == 0 {
			break
		}
		require.LessOrEqual(t, len(page), 3)
		pages = append(pages, page)
		after = page[len(page)-1]
	}
	require.Len(t, pages, 4)
	var flat []int64
	for _, p := range pages {
		flat = append(flat, p...)
	}
	require.Equal(t, list(tasks.ListFilter{}), flat)
	require.Equal(t, []int64{b[1].ID, b[2].ID}, list(tasks.ListFilter{Queue: "b", AfterID: b[0].ID, Limit: 2}))

	// The default page size.
	e.submitN(120, e.spec())
	require.Len(t, list(tasks.ListFilter{}), 100)
	full, err := e.s.List(e.ctx, tasks.ListFilter{State: tasks.StateRunning})
	require.NoError(t, err)
	for _, task := range full {
		require.Equal(t, tasks.StateRunning, task.State)
		require.Equal(t, e.module, task.Module)
	}
}

// testListPayloads: List leaves out inputs and results but gives their
// sizes; Get, Submit, Cancel and Retry return the input whole, Claim up
// to tasks.ClaimInline bytes (testClaimInline).
func testListPayloads(t *testing.T, e *env) {
	input, result := bytes.Repeat([]byte("in"), 50_000), bytes.Repeat([]byte("out"), 70_000)
	spec := e.spec()
	spec.Input = input
	done := e.submit(spec)
	require.Equal(t, input, done.Input)
	require.Equal(t, len(input), done.InputSize)
	cl := e.claimOne("a", done.ID)
	require.Nil(t, cl.Task.Input, "an input over tasks.ClaimInline is left out of the claim")
	require.Equal(t, len(input), cl.Task.InputSize)
	require.Zero(t, cl.Task.ResultSize)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateSucceeded, Result: result,
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))
	spec.Input = []byte("small")
	queued := e.submit(spec)
	empty := e.submit(e.spec())
	require.Nil(t, empty.Input)
	require.Zero(t, empty.InputSize)

	got := e.get(done.ID)
	require.Equal(t, input, got.Input)
	require.Equal(t, result, got.Result)
	require.Equal(t, len(input), got.InputSize)
	require.Equal(t, len(result), got.ResultSize)
	list, err := e.s.List(e.ctx, tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, list, 3)
	for i, want := range []struct{ in, out int }{{len(input), len(result)}, {5, 0}, {0, 0}} {
		require.Nil(t, list[i].Input, "task %d", list[i].ID)
		require.Nil(t, list[i].Result, "task %d", list[i].ID)
		require.Equal(t, want.in, list[i].InputSize, "task %d", list[i].ID)
		require.Equal(t, want.out, list[i].ResultSize, "task %d", list[i].ID)
	}
	cancelled, err := e.s.Cancel(e.ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("small"), cancelled.Input)
	retried, err := e.s.Retry(e.ctx, queued.ID)
	require.NoError(t, err)
	require.Equal(t, []byte("small"), retried.Input)
	require.Equal(t, 5, retried.InputSize)

	// An idempotent submit returns the first task, input included.
	spec = e.spec()
	spec.Input, spec.IdempotencyKey = input, "payload"
	first := e.submit(spec)
	spec.Input = []byte("other")
	again, existing, err := e.s.Submit(e.ctx, spec)
	require.NoError(t, err)
	require.True(t, existing)
	require.Equal(t, first.ID, again.ID)
	require.Equal(t, input, again.Input)
}

func testAttempts(t *testing.T, e *env) {
	task := e.submit(tasks.Spec{Module: e.module, MaxAttempts: 5})
	as := e.attempts(task.ID)
	require.NotNil(t, as)
	require.Empty(t, as)

	outcomes := []tasks.Attempt{
		{Outcome: "interrupted", ExitCode: 75, Reason: "shutdown"},
		{Outcome: "failed", ExitCode: 2, Reason: "out of memory", Counted: true},
		{Outcome: "timed_out", ExitCode: -1, Reason: "deadline", Counted: true},
	}
	for i, a := range outcomes {
		cl := e.claimOne(fmt.Sprint("owner-", i), task.ID)
		e.clock.Advance(time.Second)
		require.NoError(t, e.complete(tasks.Completion{Lease: cl.Lease, State: tasks.StateQueued, Attempt: a}))
	}
	cl := e.claimOne("last", task.ID)
	// The lease expires: the next claim records the attempt as lost.
	e.clock.Advance(lease + time.Second)
	cl2 := e.claimOne("next", task.ID)
	require.NoError(t, e.complete(tasks.Completion{Lease: cl2.Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded"}}))

	as = e.attempts(task.ID)
	require.Len(t, as, 5)
	for i, a := range as {
		require.Equal(t, i+1, a.Number, "oldest first")
		require.Equal(t, task.ID, a.TaskID)
		require.False(t, a.StartedAt.IsZero())
		require.False(t, a.EndedAt.IsZero())
		if i < 3 {
			want := outcomes[i]
			require.Equal(t, fmt.Sprint("owner-", i), a.Owner)
			require.Equal(t, want.Outcome, a.Outcome)
			require.Equal(t, want.ExitCode, a.ExitCode)
			require.Equal(t, want.Reason, a.Reason)
			require.Equal(t, want.Counted, a.Counted)
			require.Equal(t, time.Second, a.Duration())
		}
	}
	require.Equal(t, "last", as[3].Owner)
	require.Equal(t, cl.Lease.Token, as[3].Number)
	require.Equal(t, "lost", as[3].Outcome)
	require.False(t, as[3].Counted)
	require.Equal(t, "next", as[4].Owner)
	require.Equal(t, "succeeded", as[4].Outcome)
	got := e.get(task.ID)
	require.Equal(t, 2, got.Failures, "the failed and timed out attempts (not the interrupted and lost ones)")
	require.Equal(t, 5, got.Attempt)
}

func testListPaging(t *testing.T, e *env) {
	var specs []tasks.Spec
	for i := range 40 {
		specs = append(specs, tasks.Spec{Module: e.module, Queue: []string{"a", "b", "c"}[i%3]})
	}
	_, err := tasks.SubmitMany(e.ctx, e.s, specs)
	require.NoError(t, err)
	cl := e.claim("p", 12)
	for i, c := range cl[:6] {
		st := []tasks.State{tasks.StateSucceeded, tasks.StateDead, tasks.StateCancelled}[i%3]
		require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: st}))
	}
	for _, f := range []tasks.ListFilter{
		{}, {Queue: "b"}, {State: tasks.StateQueued}, {State: tasks.StateRunning}, {State: tasks.StateSucceeded},
		{State: tasks.StateDead, Queue: "a"}, {State: tasks.StateCancelled}, {Queue: "none"},
	} {
		whole := e.all(tasks.ListFilter{State: f.State, Queue: f.Queue, Limit: 1000})
		for _, limit := range []int{2, 7} {
			f.Limit = limit
			seen := map[int64]bool{}
			flat := []int64{}
			after := int64(0)
			for {
				f.AfterID = after
				page, err := e.s.List(e.ctx, f)
				require.NoError(t, err)
				require.LessOrEqual(t, len(page), limit)
				if len(page) == 0 {
					break
				}
				for _, task := range page {
					require.False(t, seen[task.ID], "task %d on two pages (%+v)", task.ID, f)
					seen[task.ID] = true
					require.Greater(t, task.ID, after)
					if f.State != "" {
						require.Equal(t, f.State, task.State)
					}
					if f.Queue != "" {
						require.Equal(t, f.Queue, task.Queue)
					}
					flat = append(flat, task.ID)
				}
				after = page[len(page)-1].ID
			}
			require.Equal(t, taskIDs(whole), flat, "pages of %d with %+v", limit, f)
		}
	}
}
