package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// TestServePostgresTenantLimitUnderSIGKILL: a tenant limited to one task
// running at once, across two runners of one PostgreSQL store, one of
// which is killed with SIGKILL while it runs that tenant's task: every
// task succeeds exactly once, the killed runner's task resumes from its
// checkpoint, and no two of the tenant's attempts ever overlap (the dead
// runner's holds the tenant's slot until its lease is taken over).
func TestServePostgresTenantLimitUnderSIGKILL(t *testing.T) {
	t.Parallel()
	s, url := pgStore(t)
	ctx := context.Background()
	require.NoError(t, s.SetTenantMaxRunning(ctx, "capped", 1))
	spec := primesSpec(t, s)
	spec.Input, spec.Tenant = []byte("1500000 20000"), "capped"
	const n = 3
	ids := submitMany(t, s, spec, n)
	killDoomedRunner(t, s, url)
	b := pgRunner(t, url, "survivor", "--lease", "2s")
	testutil.WaitFor(t, "every task to succeed", func() bool { return allSucceeded(t, s, n) })
	stopAll(t, b)

	requireOnceNeverTogether(t, s, ids, "the capped tenant")
	got, err := s.Tenants(ctx)
	require.NoError(t, err)
	require.Equal(t, tasks.Tenant{Weight: 1, SharedLimits: tasks.SharedLimits{MaxRunning: 1}}, got["capped"])
}

// requireSucceededOnce checks that exactly one of atts, the attempts of
// task id, succeeded.
func requireSucceededOnce(t testing.TB, id int64, atts []tasks.Attempt) {
	t.Helper()
	succeeded := 0
	for _, att := range atts {
		if att.Outcome == "succeeded" {
			succeeded++
		}
	}
	require.Equal(t, 1, succeeded, "task %d succeeded exactly once: %+v", id, atts)
}

// killDoomedRunner starts a runner, "doomed", on url (lease 2 s), waits
// until it runs a capped task that has stored a checkpoint and kills it
// with SIGKILL at once: a task it finished first would have nothing to
// resume.
func killDoomedRunner(t *testing.T, s *postgres.Store, url string) {
	t.Helper()
	a := pgRunner(t, url, "doomed", "--lease", "2s")
	waitRunningWithCheckpoint(t, s, "doomed", "the doomed runner to run a capped task with a checkpoint")
	a.kill(t)
}

// requireOnceNeverTogether checks the primes tasks ids of a limit of one
// running task (what: "the capped tenant"): each succeeded exactly once
// with the right output, an attempt lost when the doomed runner was
// killed was followed by one that resumed from its checkpoint, and no
// two of their attempts overlap.
func requireOnceNeverTogether(t *testing.T, s tasks.Store, ids []int64, what string) {
	t.Helper()
	ctx := context.Background()
	type span struct {
		start, end time.Time
		what       string
	}
	var spans []span
	for _, id := range ids {
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, "primes below 1500000: 114155\n", string(task.Result), "task %d", id)
		atts, err := s.Attempts(ctx, id)
		require.NoError(t, err)
		requireSucceededOnce(t, id, atts)
		for _, att := range atts {
			spans = append(spans, span{att.StartedAt, att.EndedAt, att.Owner + " " + att.Outcome})
		}
		for i, att := range atts {
			if att.Outcome == "lost" { // the doomed runner's, killed (it may have finished others before)
				require.Equal(t, "doomed", att.Owner, "task %d: %+v", id, atts)
				require.Greater(t, len(atts), i+1, "task %d: %+v", id, atts)
				require.True(t, atts[i+1].Resumed, "task %d resumed from its checkpoint: %+v", id, atts)
			}
		}
	}
	slices.SortFunc(spans, func(x, y span) int { return x.start.Compare(y.start) })
	for i := 1; i < len(spans); i++ {
		require.False(t, spans[i].start.Before(spans[i-1].end),
			"%s ran two tasks at once: %s %v-%v and %s from %v", what, spans[i-1].what, spans[i-1].start,
			spans[i-1].end, spans[i].what, spans[i].start)
	}
}
