package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// adoptable stores n tasks of the fixture already claimed by the pool.
func (f *fixture) adoptable(t *testing.T, fixtureName string, n int) []tasks.Claimed {
	t.Helper()
	sha := putFixture(t, f.store, fixtureName)
	specs := make([]tasks.Spec, n)
	for i := range specs {
		specs[i] = tasks.Spec{Module: sha}
	}
	res, err := f.store.SubmitManyClaimed(context.Background(), specs, f.pl.Owner(), time.Minute)
	require.NoError(t, err)
	cs := make([]tasks.Claimed, n)
	for i, r := range res {
		cs[i] = tasks.ClaimedOf(r.Task)
	}
	return cs
}

// Tasks stored already claimed run as claimed ones, each attempt once.
func TestPoolAdopt(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{Workers: 2})
	cs := f.adoptable(t, "noop", 20)
	require.Equal(t, 20, f.pl.Adopt(cs))
	for _, c := range cs {
		got := f.wait(t, c.Task.ID)
		require.Equal(t, tasks.StateSucceeded, got.State)
		require.Equal(t, 1, got.Attempt)
		as := attempts(t, f.store, c.Task.ID)
		require.Len(t, as, 1)
		require.Equal(t, f.pl.Owner(), as[0].Owner)
	}
}

// Adopt waits while the workers are busy and tasks wait for them; a stop
// of the intake gives back every adopted task no worker started, as a
// released claim: queued again, no attempt left behind.
func TestPoolAdoptReleasesOnStop(t *testing.T) {
	t.Parallel()
	f := newFixture(t, pool.Config{Workers: 1, ClaimBatch: 4})
	stuck := f.submit(t, "stop_ignore", tasks.Spec{Limits: tasks.Limits{Timeout: time.Hour}})
	f.waitRunning(t, stuck.ID, 1)
	cs := f.adoptable(t, "noop", 30) // more than the ready queue holds (1 + 4)
	handed := make(chan int)
	go func() { handed <- f.pl.Adopt(cs) }()
	testutil.WaitFor(t, "Adopt to take the tasks in", func() bool { return f.pl.Stats().Running >= 31 })
	select {
	case n := <-handed:
		t.Fatalf("Adopt returned (%d handed over) while no worker was free", n)
	default:
	}
	f.pl.StopIntake()
	require.Less(t, <-handed, 30)
	f.pl.ForceStop()
	<-f.pl.Idle()
	for _, c := range cs {
		got, err := f.store.Get(context.Background(), c.Task.ID)
		require.NoError(t, err)
		require.Equal(t, tasks.StateQueued, got.State, "task %d", c.Task.ID)
		require.Zero(t, got.Attempt, "a released claim leaves no trace")
		require.Empty(t, attempts(t, f.store, c.Task.ID))
	}
}
