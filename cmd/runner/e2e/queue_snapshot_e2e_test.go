package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// Snapshots in the queue (issue 39), end to end: chase, a C guest that
// knows nothing of Stint, is killed, drained and taken over mid-run, and
// its result is checked against ckernels.ChaseOutput, an oracle that
// shares no code with Stint.

// The workload: a few seconds of pointer chasing through 8 MiB.
const e2eChaseRounds, e2eChaseMiB = 24, 8

// chaseFile writes chase's module into a temporary directory.
func chaseFile(t *testing.T) (path string, wasm []byte) {
	t.Helper()
	wasm, err := ckernels.Build(testwasm.CacheDir(t), "chase")
	if err != nil {
		require.ErrorIs(t, err, ckernels.ErrUnavailable)
		t.Skip(err)
	}
	path = filepath.Join(t.TempDir(), "chase.wasm")
	require.NoError(t, os.WriteFile(path, wasm, 0o600))
	return path, wasm
}

func snapshotArgs(dir string, extra ...string) []string {
	return serveArgs(dir, append([]string{"--snapshots-enabled", "true", "--snapshots-every", "300ms"}, extra...)...)
}

// waitSnapshot waits until the task has a snapshot stored by its attempt n.
func waitSnapshot(t *testing.T, s tasks.Store, id int64, n int) tasks.SnapshotInfo {
	t.Helper()
	var info tasks.SnapshotInfo
	testutil.WaitFor(t, "a snapshot stored by attempt "+strconv.Itoa(n), func() bool {
		task, err := s.Get(context.Background(), id)
		require.NoError(t, err)
		if task.Snapshot != nil && task.Snapshot.Attempt >= n {
			info = *task.Snapshot
			return true
		}
		require.NotEqual(t, tasks.StateSucceeded, task.State, "the task ended before the runner was stopped: give chase more work")
		return false
	})
	return info
}

// TestServeSnapshotsSurviveSIGKILL: the runner is killed with SIGKILL
// twice while chase runs, each time once a snapshot is stored, and
// restarted; the task resumes each time, is charged no failure, and its
// result is the uninterrupted run's, byte for byte.
func TestServeSnapshotsSurviveSIGKILL(t *testing.T) {
	t.Parallel()
	path, _ := chaseFile(t)
	dir := dataDir(t)
	id := submitN(t, dir, path, string(ckernels.ChaseInput(e2eChaseRounds, e2eChaseMiB)), 1)[0]
	taskID, err := strconv.ParseInt(id, 10, 64)
	require.NoError(t, err)
	s := openTestStore(t, dir)
	for kill := 1; kill <= 2; kill++ {
		p := startRunner(t, nil, snapshotArgs(dir)...)
		p.waitLine(t, "runner ready")
		info := waitSnapshot(t, s, taskID, kill)
		t.Logf("kill %d: snapshot of %d bytes at %s of run time", kill, info.Size, info.RunTime)
		p.signal(t, syscall.SIGKILL)
		p.wait(t)
	}
	p := startRunner(t, nil, snapshotArgs(dir)...)
	task := waitTaskState(t, s, taskID, tasks.StateSucceeded)
	p.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, p.wait(t), p.stderr())

	require.Equal(t, ckernels.ChaseOutput(e2eChaseRounds, e2eChaseMiB), string(task.Result))
	require.Zero(t, task.Failures, "a lost attempt is not counted")
	require.Nil(t, task.Snapshot, "a task that ended keeps no snapshot")
	require.GreaterOrEqual(t, task.Snapshots, 2)
	atts, err := s.Attempts(context.Background(), taskID)
	require.NoError(t, err)
	outcomes := make([]string, len(atts))
	for i, a := range atts {
		outcomes[i] = a.Outcome
		require.False(t, a.Counted, "attempt %d", a.Number)
	}
	require.Equal(t, []string{"lost", "lost", "succeeded"}, outcomes)
	require.True(t, atts[2].Resumed, "the last attempt did not resume")
}

// TestServeDrainSuspendsTask: SIGTERM while chase runs: the drain
// suspends it (chase never reads stop_requested), its snapshot stored,
// the task queued with the attempt not counted; the next runner resumes
// it, and the result is the uninterrupted run's.
func TestServeDrainSuspendsTask(t *testing.T) {
	t.Parallel()
	path, _ := chaseFile(t)
	dir := dataDir(t)
	id := submitN(t, dir, path, string(ckernels.ChaseInput(e2eChaseRounds, e2eChaseMiB)), 1)[0]
	taskID, err := strconv.ParseInt(id, 10, 64)
	require.NoError(t, err)
	s := openTestStore(t, dir)
	drain := []string{"--shutdown-drain", "100ms", "--shutdown-cancel", "100ms"}
	p := startRunner(t, nil, snapshotArgs(dir, drain...)...)
	p.waitLine(t, "runner ready")
	waitSnapshot(t, s, taskID, 1)
	p.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, p.wait(t), p.stderr())
	task, err := s.Get(context.Background(), taskID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateQueued, task.State)
	require.NotNil(t, task.Snapshot)
	require.True(t, task.Snapshot.Suspended, "the stored snapshot is not the drain's")
	atts, err := s.Attempts(context.Background(), taskID)
	require.NoError(t, err)
	require.Len(t, atts, 1)
	require.Equal(t, "suspended", atts[0].Outcome, atts[0].Reason)
	require.False(t, atts[0].Counted)

	shown, stderr, code := runRunner(t, "", "tasks", "show", id, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, shown, "the next attempt resumes from it")

	p = startRunner(t, nil, snapshotArgs(dir, drain...)...)
	task = waitTaskState(t, s, taskID, tasks.StateSucceeded)
	p.signal(t, syscall.SIGTERM)
	require.Equal(t, 0, p.wait(t), p.stderr())
	require.Equal(t, ckernels.ChaseOutput(e2eChaseRounds, e2eChaseMiB), string(task.Result))
	require.Zero(t, task.Failures)
}

// TestPostgresSnapshotTakeover: three runners share a PostgreSQL store;
// the one running chase is killed with SIGKILL once a snapshot is stored;
// another takes the task over when its lease expires and resumes it, and
// the result is the uninterrupted run's.
func TestPostgresSnapshotTakeover(t *testing.T) {
	t.Parallel()
	schema, url := pgSchema(t)
	_, wasm := chaseFile(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("STINT_TEST_POSTGRES"), postgres.Options{Schema: schema})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	sha, err := s.PutModule(ctx, wasm)
	require.NoError(t, err)
	task, _, err := s.Submit(ctx, tasks.Spec{Module: sha, Input: ckernels.ChaseInput(e2eChaseRounds, e2eChaseMiB)})
	require.NoError(t, err)

	runners := map[string]*proc{}
	for _, owner := range []string{"pg-a", "pg-b", "pg-c"} {
		runners[owner] = startRunner(t, nil, snapshotArgs(dataDir(t), "--store", url, "--owner", owner, "--lease", "2s", "--workers", "1")...)
	}
	for _, p := range runners {
		p.waitLine(t, "runner ready")
	}
	info := waitSnapshot(t, s, task.ID, 1)
	holder := info.Owner
	require.Contains(t, runners, holder)
	runners[holder].signal(t, syscall.SIGKILL)
	runners[holder].wait(t)
	delete(runners, holder)

	done := waitTaskState(t, s, task.ID, tasks.StateSucceeded)
	for _, p := range runners {
		p.signal(t, syscall.SIGTERM)
		require.Equal(t, 0, p.wait(t), p.stderr())
	}
	require.Equal(t, ckernels.ChaseOutput(e2eChaseRounds, e2eChaseMiB), string(done.Result))
	require.Zero(t, done.Failures)
	atts, err := s.Attempts(ctx, task.ID)
	require.NoError(t, err)
	require.Len(t, atts, 2)
	require.Equal(t, "lost", atts[0].Outcome)
	require.False(t, atts[0].Counted)
	require.Equal(t, "succeeded", atts[1].Outcome)
	require.True(t, atts[1].Resumed)
	require.NotEqual(t, holder, atts[1].Owner, "the killed runner ran it again")
	require.True(t, strings.HasPrefix(atts[1].Owner, "pg-"))
}

// waitTaskState waits until the task is in state st and returns it.
func waitTaskState(t *testing.T, s tasks.Store, id int64, st tasks.State) tasks.Task {
	t.Helper()
	var task tasks.Task
	testutil.WaitFor(t, "task "+strconv.FormatInt(id, 10)+" to be "+string(st), func() bool {
		var err error
		task, err = s.Get(context.Background(), id)
		require.NoError(t, err)
		require.NotEqual(t, tasks.StateDead, task.State, task.LastError)
		return task.State == st
	})
	return task
}
