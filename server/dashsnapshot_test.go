package server_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// TestDashboardSnapshots: a task's page says what its stored snapshot is
// (size, runner, attempt, run time and work, how it was taken, how many
// were stored) and how many attempts it lost in a row; a task whose
// snapshot was dropped says how many were stored; the overview shows the
// pool's suspended, resumed and snapshot counters. A runner's name is
// escaped like every other value.
func TestDashboardSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, mod := noopStore(t, sqlite.Options{})
	claim := func(owner, queue string) tasks.Lease {
		return claimOne(t, st, tasks.ClaimRequest{Owner: owner, Queues: map[string]int{queue: 1}, Max: 1, Lease: time.Hour}).Lease
	}

	// Task a: two snapshots, the second as its attempt was suspended;
	// then its runner dies (recovered as lost: a lost streak of 1).
	a := submitSpec(t, st, mod, tasks.Spec{})
	l := claim(hostile, "default")
	require.NoError(t, st.SaveSnapshot(ctx, l, bytes.Repeat([]byte{1}, 4096), tasks.SnapshotInfo{Work: 5, RunTime: time.Second}))
	require.NoError(t, st.SaveSnapshot(ctx, l, bytes.Repeat([]byte{2}, 3<<19), // 1.5 MiB
		tasks.SnapshotInfo{Work: 7, RunTime: 1200 * time.Millisecond, Suspended: true}))
	n, err := st.RecoverRunning(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// Task b: one snapshot taken while it ran, dropped since.
	b := submitSpec(t, st, mod, tasks.Spec{Queue: "other"})
	l = claim("runner-b", "other")
	require.Equal(t, b.ID, l.TaskID)
	require.NoError(t, st.SaveSnapshot(ctx, l, []byte("snapshot"), tasks.SnapshotInfo{Work: 5, RunTime: time.Second}))
	require.NoError(t, st.DropSnapshot(ctx, l))

	// Task c: an attempt that resumed from a snapshot says which.
	c := submitSpec(t, st, mod, tasks.Spec{Queue: "third"})
	l = claim("runner-c", "third")
	require.Equal(t, c.ID, l.TaskID)
	errs, err := st.Complete(ctx, []tasks.Completion{{Lease: l, State: tasks.StateSucceeded, Attempt: tasks.Attempt{Outcome: "succeeded",
		Resumed: true, ResumedFrom: &tasks.SnapshotInfo{Owner: hostile, Attempt: 2, Work: 99, RunTime: 3 * time.Second}}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])

	srv, err := server.New(server.Config{}, server.Deps{Store: st, Stats: func() server.PoolStats {
		return server.PoolStats{Started: 4, Suspended: 2, Resumed: 3, Snapshots: 9, SnapshotBytes: 8 << 20, SnapshotTime: 1200 * time.Millisecond}
	}})
	require.NoError(t, err)
	h := srv.Handler()

	body := wantPage(t, get(t, h, "/tasks/"+itoa(a.ID)), http.StatusOK,
		`<dt>Snapshot</dt><dd id="snapshot">1.5 MiB, taken by &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; in attempt 1 `+
			`at 1.2s of run time and 7 work units, as the attempt was suspended; 2 stored in all; the next attempt resumes from it`,
		`<dt>Lost</dt><dd id="lost-streak">1 attempt in a row without progress`,
		"Attempt 1: lost")
	require.NotContains(t, body, "stored, none kept now")

	body = wantPage(t, get(t, h, "/tasks/"+itoa(b.ID)), http.StatusOK,
		`<dt>Snapshots</dt><dd id="snapshot">1 stored, none kept now</dd>`)
	require.NotContains(t, body, "the next attempt resumes from it")
	require.NotContains(t, body, `id="lost-streak"`)

	wantPage(t, get(t, h, "/tasks/"+itoa(c.ID)), http.StatusOK, `<span class="tag">resumed from a snapshot</span>`,
		`Resumed from the snapshot of attempt 2 by &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;: 3s of run time, 99 work units.`)

	wantPage(t, get(t, h, "/"), http.StatusOK,
		"2 suspended, 3 resumed from a snapshot",
		`<dd id="pool-snapshots">9 stored, 8.0 MiB, 1.2s spent storing them</dd>`)
}
