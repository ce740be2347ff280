package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestStoreSyncFullSurvivesSIGKILL: a runner on a store with store_sync
// full is killed with SIGKILL while it works; every task, result and
// checkpoint it committed before is in the store after.
func TestStoreSyncFullSurvivesSIGKILL(t *testing.T) {
	t.Parallel()
	primes := testwasm.GoGuest(t, "primes")
	dir := dataDir(t)
	const n, want = "100000 5000", "primes below 100000: 9592\n"
	out, stderr, code := runRunner(t, n, "submit", primes, "--input", "-", "--store-sync", "full", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	s := openTestStore(t, dir)
	ctx := context.Background()
	first, err := s.Get(ctx, mustID(t, out))
	require.NoError(t, err)
	specs := make([]tasks.Spec, 11)
	for i := range specs {
		specs[i] = first.Spec
	}
	_, err = tasks.SubmitMany(ctx, s, specs)
	require.NoError(t, err)

	p := startServe(t, dir, "--store-sync", "full")
	// What the runner committed, seen from this process before the kill.
	results := map[int64][]byte{}
	checkpoints := map[int64]uint64{} // task: the next number its checkpoint tests
	testutil.WaitFor(t, "a result and a checkpoint committed", func() bool {
		done, err := s.List(ctx, tasks.ListFilter{State: tasks.StateSucceeded})
		require.NoError(t, err)
		for _, d := range done {
			got, err := s.Get(ctx, d.ID)
			require.NoError(t, err)
			results[d.ID] = got.Result
		}
		running, err := s.List(ctx, tasks.ListFilter{State: tasks.StateRunning})
		require.NoError(t, err)
		for _, r := range running {
			cp, err := s.Checkpoint(ctx, r.ID)
			require.NoError(t, err)
			// primes' checkpoint: N, next number to test, count (uint64 LE).
			if len(cp) == 24 {
				checkpoints[r.ID] = binary.LittleEndian.Uint64(cp[8:])
			}
		}
		return len(results) > 0 && len(checkpoints) > 0
	})
	p.kill(t)

	after, err := sqlite.Open(ctx, filepath.Join(dir, "stint.db"), sqlite.Options{Sync: sqlite.SyncFull})
	require.NoError(t, err)
	defer func() { require.NoError(t, after.Close()) }()
	all, err := after.List(ctx, tasks.ListFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, all, 12, "every submitted task")
	for id, res := range results {
		got, err := after.Get(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tasks.StateSucceeded, got.State, "task %d", id)
		require.Equal(t, want, string(res), "task %d", id)
		require.Equal(t, res, got.Result, "task %d: its result", id)
	}
	for id, next := range checkpoints {
		cp, err := after.Checkpoint(ctx, id)
		require.NoError(t, err)
		require.Len(t, cp, 24, "task %d: its checkpoint", id)
		require.GreaterOrEqual(t, binary.LittleEndian.Uint64(cp[8:]), next,
			"task %d: its checkpoint is the one seen before the kill, or a later one", id)
	}
	t.Logf("after SIGKILL: %d results and %d checkpoints (task: next number) kept: %v",
		len(results), len(checkpoints), strconv.Quote(func() string { b, _ := json.Marshal(checkpoints); return string(b) }()))
}
