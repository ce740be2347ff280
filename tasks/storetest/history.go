package storetest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// History: the attempt history a store gives back (Attempts) is what was
// recorded, attempt by attempt, whatever the store keeps where (the
// PostgreSQL store keeps the attempt of a first-try success in the task
// row): first-try successes, retried successes, failures, lost attempts
// (not counted; dead at DefaultLostLimit lost in a row), released claims,
// cancelled tasks and retries, in random sequences.

// testAttemptHistory drives tasks through random sequences of attempts and
// checks, after every step, that the history read back equals the one
// recorded. The first scripts are fixed so that each kind of history is
// there whatever the seed.
func testAttemptHistory(t *testing.T, e *env) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	fixed := [][]string{
		{"success"},                            // first try
		{"success-plain"},                      // first try, nothing but the defaults
		{"fail", "success"},                    // retried
		{"fail", "fail", "fail"},               // dead (MaxAttempts 3)
		{"lost", "success"},                    // lost, then success
		{"release", "success"},                 // a released claim records nothing
		{"cancel"},                             // cancelled while running
		{"checkpoint", "interrupt", "success"}, // resumed
		{"dead", "retry", "success"},           // retried by hand after dying
		// Lost three times in a row (a release in between ends no
		// streak): dead; retried, lost again, then a success.
		{"lost", "release", "lost", "lost", "retry", "lost", "success"},
	}
	for i := range 40 {
		var script []string
		if i < len(fixed) {
			script = fixed[i]
		}
		h := &history{e: e, rng: rng, script: script}
		h.run(t)
	}
}

// history is one task's run and the attempts recorded so far.
type history struct {
	e      *env
	rng    *rand.Rand
	script []string // the steps to take; random ones after them
	task   tasks.Task
	want   []tasks.Attempt
	// streak counts the attempts lost in a row (Task.LostStreak).
	streak int
}

// next is the next step: the script's, else a random one.
func (h *history) next() string {
	if len(h.script) > 0 {
		s := h.script[0]
		h.script = h.script[1:]
		return s
	}
	steps := []string{"success", "success", "success-plain", "fail", "interrupt", "dead", "lost", "release",
		"cancel", "checkpoint"}
	return steps[h.rng.IntN(len(steps))]
}

func (h *history) run(t *testing.T) {
	e := h.e
	fixed := len(h.script) > 0
	maxAttempts := 3
	if !fixed {
		maxAttempts = 1 + h.rng.IntN(4)
	}
	h.task = e.submit(tasks.Spec{Module: e.module, MaxAttempts: maxAttempts})
	h.check(t, "submitted")
	// A task left queued is cancelled, so that the next one is the only
	// one claimed.
	defer func() {
		if e.get(h.task.ID).State == tasks.StateQueued {
			_, err := e.s.Cancel(e.ctx, h.task.ID)
			require.NoError(t, err)
			h.check(t, "cancelled while queued")
		}
	}()
	for steps := 0; steps < 12; steps++ {
		state := e.get(h.task.ID).State
		if state == tasks.StateSucceeded {
			return
		}
		if state == tasks.StateDead || state == tasks.StateCancelled {
			if len(h.script) > 0 && h.script[0] == "retry" || !fixed && h.rng.IntN(2) == 0 {
				if len(h.script) > 0 {
					h.script = h.script[1:]
				}
				_, err := e.s.Retry(e.ctx, h.task.ID)
				require.NoError(t, err)
				h.streak = 0
				h.check(t, "retried")
				continue
			}
			return
		}
		if fixed && len(h.script) == 0 {
			return
		}
		h.attempt(t, h.next())
	}
}

// attempt claims the task and ends its attempt as step says.
func (h *history) attempt(t *testing.T, step string) {
	e := h.e
	owner := fmt.Sprintf("owner-%d", h.rng.IntN(3))
	claimedAt := e.clock.Now()
	cl := e.claimOne(owner, h.task.ID)
	resumed := cl.Checkpoint != nil
	e.clock.Advance(time.Duration(1+h.rng.IntN(5)) * time.Second)
	rec := tasks.Attempt{TaskID: h.task.ID, Number: cl.Lease.Token, Owner: owner, StartedAt: claimedAt, Resumed: resumed}
	c := tasks.Completion{Lease: cl.Lease}
	// The fields a worker fills, at random (given times, stderr, work).
	fill := func() {
		if h.rng.IntN(2) == 0 {
			rec.StartedAt = claimedAt.Add(time.Duration(h.rng.IntN(500)) * time.Millisecond)
			c.Attempt.StartedAt = rec.StartedAt
		}
		rec.EndedAt = e.clock.Now()
		if h.rng.IntN(2) == 0 {
			rec.EndedAt = rec.EndedAt.Add(-time.Duration(h.rng.IntN(500)) * time.Millisecond)
			c.Attempt.EndedAt = rec.EndedAt
		}
		if h.rng.IntN(2) == 0 {
			c.Attempt.Stderr = fmt.Sprintf("stderr %d ✓\n", h.rng.IntN(1000))
		}
		c.Attempt.Work = h.rng.Int64N(1 << 40)
		if h.rng.IntN(4) == 0 {
			c.Attempt.Resumed = true
		}
		rec.Stderr, rec.Work, rec.Resumed = c.Attempt.Stderr, c.Attempt.Work, resumed || c.Attempt.Resumed
	}
	switch step {
	case "success", "success-plain":
		c.State = tasks.StateSucceeded
		c.Attempt.Outcome = "succeeded"
		if step == "success" {
			fill()
		} else {
			rec.EndedAt = e.clock.Now()
		}
	case "fail", "dead", "interrupt":
		fill()
		c.State, c.Attempt.Outcome, c.Attempt.ExitCode, c.Attempt.Counted = tasks.StateQueued, "failed", 1+h.rng.IntN(100), true
		c.Attempt.Reason = fmt.Sprintf("exit code %d", c.Attempt.ExitCode)
		switch step {
		case "dead":
			c.State = tasks.StateDead
		case "interrupt":
			c.Attempt.Outcome, c.Attempt.ExitCode, c.Attempt.Counted = "interrupted", 0, false
			c.Attempt.Reason = ""
		}
	case "cancel":
		_, err := e.s.Cancel(e.ctx, h.task.ID)
		require.NoError(t, err)
		fill()
		c.State, c.Attempt.Outcome = tasks.StateCancelled, "cancelled"
	case "checkpoint":
		require.NoError(t, e.s.SaveCheckpoint(e.ctx, cl.Lease, []byte("cp")))
		fill()
		c.State, c.Attempt.Outcome = tasks.StateQueued, "interrupted"
	case "release":
		require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{cl.Lease}))
		h.check(t, "released")
		return
	case "lost":
		// The lease runs out; the next claim (of anyone) takes it over:
		// not counted, and dead at DefaultLostLimit lost in a row.
		expiry := claimedAt.Add(lease)
		e.clock.Advance(lease)
		_ = e.claim("reaper", 10)
		rec.EndedAt, rec.Outcome, rec.ExitCode, rec.Counted = expiry, "lost", -1, false
		rec.Reason = "lease of " + owner + " expired without a heartbeat"
		h.streak++
		if h.streak >= tasks.DefaultLostLimit {
			rec.Reason += "; " + tasks.LostLimitReason(tasks.DefaultLostLimit)
			require.Equal(t, tasks.StateDead, e.get(h.task.ID).State, "lost %d in a row", h.streak)
		}
		h.want = append(h.want, rec)
		h.check(t, "lost")
		require.Equal(t, h.streak, e.get(h.task.ID).LostStreak)
		// The reaper's claim may have taken the task again: give it back.
		if got := e.get(h.task.ID); got.State == tasks.StateRunning {
			require.NoError(t, e.s.Release(e.ctx, []tasks.Lease{{TaskID: h.task.ID, Owner: "reaper", Token: got.Attempt}}))
		}
		return
	default:
		t.Fatalf("unknown step %q", step)
	}
	require.NoError(t, e.complete(c))
	h.streak = 0
	rec.Outcome, rec.ExitCode, rec.Reason, rec.Counted = c.Attempt.Outcome, c.Attempt.ExitCode, c.Attempt.Reason, c.Attempt.Counted
	h.want = append(h.want, rec)
	h.check(t, step)
	require.Zero(t, e.get(h.task.ID).LostStreak, "an attempt that ends through Complete ends the streak")
}

// check compares the history read back with the one recorded.
func (h *history) check(t *testing.T, after string) {
	t.Helper()
	got := normalize(h.e.attempts(h.task.ID))
	want := normalize(h.want)
	if want == nil {
		want = []tasks.Attempt{}
	}
	require.Equal(t, want, got, "task %d, after %s", h.task.ID, after)
}
