package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// testCompleteRandomBatches: a batch of completions, whatever its size,
// order, states, results, stale leases and repeats, ends each task as
// the same completions written one at a time would. Each round draws a
// batch at random (the seed is logged) and checks it against a model of
// Complete applied in order: a completion whose lease holds the task ends
// its attempt (its state, failures, result and one attempt record); one
// whose lease does not (a wrong token, or the task ended earlier in the
// batch) is ErrStaleLease and changes nothing.
func testCompleteRandomBatches(t *testing.T, e *env) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	for round := range 6 {
		n := 1 + rng.IntN(150) // across the SQLite store's chunks of 64
		if round == 0 {
			n = 1
		}
		e.submitN(n, tasks.Spec{Module: e.module, MaxAttempts: 1 + rng.IntN(3)})
		cl := e.claim(fmt.Sprint("owner-", round), n)
		require.Len(t, cl, n)
		type want struct {
			state    tasks.State
			failures int
			result   []byte
			attempts int
		}
		wants := map[int64]*want{}
		held := map[int64]bool{}
		for _, c := range cl {
			wants[c.Task.ID] = &want{state: tasks.StateRunning}
			held[c.Task.ID] = true
		}
		var cs []tasks.Completion
		var stale []bool
		for range n + rng.IntN(n/4+1) {
			c := cl[rng.IntN(n)]
			comp := tasks.Completion{Lease: c.Lease}
			switch rng.IntN(4) {
			case 0:
				comp.State = tasks.StateSucceeded
				if rng.IntN(2) == 0 {
					comp.Result = fmt.Appendf(nil, "result of %d", c.Task.ID)
				}
			case 1:
				comp.State = tasks.StateQueued
				comp.Attempt = tasks.Attempt{Counted: rng.IntN(2) == 0, Reason: "again", ExitCode: 1, Outcome: "failed"}
			case 2:
				comp.State = tasks.StateDead
				comp.Attempt = tasks.Attempt{Counted: true, Reason: "boom", ExitCode: 2, Outcome: "failed"}
			default:
				comp.State = tasks.StateCancelled
			}
			bad := rng.IntN(10) == 0
			if bad {
				comp.Lease.Token++
			}
			isStale := bad || !held[c.Task.ID]
			if !isStale {
				held[c.Task.ID] = false
				w := wants[c.Task.ID]
				w.attempts++
				if comp.Attempt.Counted {
					w.failures++
				}
				w.state = comp.State
				if comp.State == tasks.StateQueued && w.failures >= c.Task.MaxAttempts {
					w.state = tasks.StateDead
				}
				if comp.State == tasks.StateSucceeded {
					w.result = comp.Result
				}
			}
			cs = append(cs, comp)
			stale = append(stale, isStale)
		}
		errs, err := e.s.Complete(e.ctx, cs)
		require.NoError(t, err)
		require.Len(t, errs, len(cs))
		for i := range cs {
			if stale[i] {
				require.ErrorIs(t, errs[i], tasks.ErrStaleLease, "round %d, completion %d of task %d", round, i, cs[i].Lease.TaskID)
			} else {
				require.NoError(t, errs[i], "round %d, completion %d of task %d", round, i, cs[i].Lease.TaskID)
			}
		}
		for id, w := range wants {
			got := e.get(id)
			require.Equal(t, w.state, got.State, "round %d, task %d", round, id)
			require.Equal(t, w.failures, got.Failures, "round %d, task %d", round, id)
			if w.state == tasks.StateSucceeded {
				require.Equal(t, w.result, got.Result, "round %d, task %d", round, id)
			}
			require.Len(t, e.attempts(id), w.attempts, "round %d, task %d", round, id)
		}
		// What stayed running or went back to the queue is ended now, so
		// that the next round claims only its own tasks.
		for _, c := range e.claim("sweep", 1000) {
			require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateCancelled}))
		}
		for _, c := range cl {
			if held[c.Task.ID] {
				require.NoError(t, e.complete(tasks.Completion{Lease: c.Lease, State: tasks.StateCancelled}))
			}
		}
	}
}
