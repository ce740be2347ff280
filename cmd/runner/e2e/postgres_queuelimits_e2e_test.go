package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/tasks"
)

// TestServePostgresQueueLimitThreeRunners: a queue limited to one task
// running at once (runner queues max-running, on the shared store), its
// tasks of two tenants, worked by three runners of one PostgreSQL store,
// one of which is killed with SIGKILL while it runs one of the queue's
// tasks: every task succeeds exactly once, the killed runner's task
// resumes from its checkpoint, no two of the queue's attempts ever
// overlap, and another queue's tasks are not held back by it.
func TestServePostgresQueueLimitThreeRunners(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	ctx := context.Background()
	_, stderr, code := runRunner(t, "", "queues", "max-running", "capped", "1", "--store", url)
	require.Equal(t, 0, code, stderr)
	spec := primesSpec(t, s)
	spec.Input, spec.Queue = []byte("1500000 20000"), "capped"
	var capped []int64
	for _, tenant := range []string{"a", "b", "a"} {
		spec.Tenant = tenant
		capped = append(capped, submitMany(t, s, spec, 1)...)
	}
	sha, err := s.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	submitMany(t, s, tasks.Spec{Module: sha, Queue: "free"}, 20)
	const n = 23

	a := pgRunner(t, url, "doomed", "--lease", "2s")
	testutil.WaitFor(t, "the doomed runner to run a capped task with a checkpoint", func() bool {
		_, ok := runningWithCheckpoint(t, s, "doomed")
		return ok
	})
	b := pgRunner(t, url, "survivor-1", "--lease", "2s")
	c := pgRunner(t, url, "survivor-2", "--lease", "2s")
	a.signal(t, syscall.SIGKILL)
	a.wait(t)
	testutil.WaitFor(t, "every task to succeed", func() bool { return allSucceeded(t, s, n) })
	stopAll(t, b, c)

	type span struct {
		start, end time.Time
		what       string
	}
	var spans []span
	for _, id := range capped {
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "primes below 1500000: 114155\n", string(task.Result), "task %d", id)
		atts, err := s.Attempts(ctx, id)
		require.NoError(t, err)
		succeeded := 0
		for _, att := range atts {
			if att.Outcome == "succeeded" {
				succeeded++
			}
			spans = append(spans, span{att.StartedAt, att.EndedAt, att.Owner + " " + att.Outcome})
		}
		require.Equal(t, 1, succeeded, "task %d succeeded exactly once: %+v", id, atts)
		if atts[0].Owner == "doomed" {
			require.Equal(t, "lost", atts[0].Outcome, "task %d: %+v", id, atts)
			require.True(t, atts[1].Resumed, "task %d resumed from its checkpoint: %+v", id, atts)
		}
	}
	slices.SortFunc(spans, func(x, y span) int { return x.start.Compare(y.start) })
	for i := 1; i < len(spans); i++ {
		require.False(t, spans[i].start.Before(spans[i-1].end),
			"the capped queue ran two tasks at once: %s %v-%v and %s from %v", spans[i-1].what, spans[i-1].start,
			spans[i-1].end, spans[i].what, spans[i].start)
	}
	out, stderr, code := runRunner(t, "", "queues", "--json", "--store", url)
	require.Equal(t, 0, code, stderr)
	var got struct{ Queues map[string]tasks.SharedLimits }
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Equal(t, map[string]tasks.SharedLimits{"capped": {MaxRunning: 1}}, got.Queues)
}
