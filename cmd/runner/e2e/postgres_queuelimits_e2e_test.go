package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
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
	_, stderr, code := runRunner(t, "", "queues", "max-running", "capped", "1", "--store", url)
	require.Equal(t, 0, code, stderr)
	spec := primesSpec(t, s)
	spec.Input, spec.Queue = []byte("1500000 20000"), "capped"
	var capped []int64
	for _, tenant := range []string{"a", "b", "a"} {
		spec.Tenant = tenant
		capped = append(capped, submitMany(t, s, spec, 1)...)
	}
	sha := putFixture(t, s, "noop")
	submitMany(t, s, tasks.Spec{Module: sha, Queue: "free"}, 20)
	const n = 23

	killDoomedRunner(t, s, url)
	b := pgRunner(t, url, "survivor-1", "--lease", "2s")
	c := pgRunner(t, url, "survivor-2", "--lease", "2s")
	testutil.WaitFor(t, "every task to succeed", func() bool { return allSucceeded(t, s, n) })
	stopAll(t, b, c)

	requireOnceNeverTogether(t, s, capped, "the capped queue")
	got := runJSON[struct{ Queues map[string]tasks.SharedLimits }](t, 0, "", "queues", "--json", "--store", url)
	require.Equal(t, map[string]tasks.SharedLimits{"capped": {MaxRunning: 1}}, got.Queues)
}
