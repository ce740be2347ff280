package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// endAttempt claims task id and records its attempt as the pool would;
// a task requeued after "later" waits an hour (others can be claimed).
func endAttempt(t *testing.T, s *sqlite.Store, id int64, next tasks.State, outcome, reason string, later ...bool) {
	t.Helper()
	endAttemptStderr(t, s, id, next, outcome, reason, "", later...)
}

// tasksShow is what runner tasks show prints of task id in the store of
// dir, with flags, checking that it exits 0.
func tasksShow(t *testing.T, dir string, id int64, flags ...string) string {
	t.Helper()
	out, stderr, code := runInProcess(t, append([]string{"tasks", "show", strconv.FormatInt(id, 10), "--data-dir", dir}, flags...)...)
	require.Equal(t, 0, code, stderr)
	return out
}

// endAttemptStderr is endAttempt for an attempt whose guest wrote stderr.
func endAttemptStderr(t *testing.T, s *sqlite.Store, id int64, next tasks.State, outcome, reason, stderr string, later ...bool) {
	t.Helper()
	ctx := context.Background()
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "test", Max: 1, Lease: time.Minute})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.Equal(t, id, cl[0].Task.ID)
	var runAt time.Time
	if len(later) > 0 && later[0] {
		runAt = time.Now().Add(time.Hour)
	}
	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: next, RunAt: runAt,
		Attempt: tasks.Attempt{Outcome: outcome, Reason: reason, Counted: outcome == "failed", Stderr: stderr}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
}

// TestTasksShowInterruptionIsNoError: an interruption on a shutdown is not
// shown as the task's last error, nor is anything for a task that
// succeeded; a real failure before an interruption still is.
func TestTasksShowInterruptionIsNoError(t *testing.T) {
	t.Parallel()
	dir := testwasm.DataDir(t)
	s := teststore.Open(t, dir)
	const stopped = "stopped cooperatively (runner shutdown)"
	// Interrupted, then succeeded.
	ok := teststore.Queue(t, s, fixture(t, "noop"), tasks.Spec{})
	endAttempt(t, s, ok, tasks.StateQueued, "interrupted", stopped)
	endAttempt(t, s, ok, tasks.StateSucceeded, "succeeded", "")
	// Failed, then interrupted: queued again.
	again := teststore.Queue(t, s, fixture(t, "noop"), tasks.Spec{})
	endAttempt(t, s, again, tasks.StateQueued, "failed", "exit code 3")
	endAttempt(t, s, again, tasks.StateQueued, "interrupted", stopped, true)
	// Only interrupted.
	once := teststore.Queue(t, s, fixture(t, "noop"), tasks.Spec{})
	endAttempt(t, s, once, tasks.StateQueued, "interrupted", stopped, true)
	require.NoError(t, s.Close())

	show := func(id int64) string {
		out := tasksShow(t, dir, id)
		return out
	}
	out := show(ok)
	require.NotContains(t, out, "last error")
	require.Contains(t, out, "interrupted", "the attempt history keeps the interruption")
	require.Contains(t, show(again), "last error:  exit code 3")
	require.NotContains(t, show(once), "last error")

	list, stderr, code := runInProcess(t, "tasks", "list", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, list, "stopped cooperatively", list)
	require.Regexp(t, fmt.Sprintf(`(?m)^%d\s+succeeded\s+2\s+default\s+\S+\s*$`, ok), list)
}

// TestTasksShowClaimed: a task a runner claimed and none of its workers
// began is shown claimed by that runner (tasks show, its --json, tasks
// list, tasks list --state claimed, tasks stats), and running once the
// runner marked it begun.
func TestTasksShowClaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testwasm.DataDir(t)
	s := teststore.Open(t, dir)
	noop := fixture(t, "noop")
	id := teststore.Queue(t, s, noop, tasks.Spec{})
	other := teststore.Queue(t, s, noop, tasks.Spec{})
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "runner-a", Max: 2, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 2)
	require.NoError(t, s.MarkBegun(ctx, []tasks.Lease{cl[1].Lease}))
	require.Equal(t, other, cl[1].Task.ID)
	require.NoError(t, s.Close())
	sid := strconv.FormatInt(id, 10)

	out, stderr, code := runInProcess(t, "tasks", "show", sid, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `state:\s+claimed by runner-a\n`, out)
	require.Regexp(t, `runner:\s+runner-a \(claimed .*; none of its workers has begun it yet\)\n`, out)
	out, stderr, code = runInProcess(t, "tasks", "show", strconv.FormatInt(other, 10), "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `state:\s+running\n`, out)
	require.Regexp(t, `runner:\s+runner-a \(began `, out)

	out, stderr, code = runInProcess(t, "tasks", "show", sid, "--json", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	var shown struct {
		Task server.TaskView `json:"task"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown))
	require.Equal(t, tasks.StateClaimed, shown.Task.State)
	require.Equal(t, "runner-a", shown.Task.LeaseOwner)
	require.True(t, shown.Task.BeganAt.IsZero())

	out, stderr, code = runInProcess(t, "tasks", "list", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, fmt.Sprintf(`\n%d\s+claimed by runner-a\s`, id), out)
	require.Regexp(t, fmt.Sprintf(`\n%d\s+running\s`, other), out)
	ids, _ := listIDs(t, dir, "--state", "claimed")
	require.Equal(t, []int64{id}, ids)
	ids, _ = listIDs(t, dir, "--state", "running")
	require.Equal(t, []int64{id, other}, ids, "running lists the claimed too")

	out, stderr, code = runInProcess(t, "tasks", "stats", "--json", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	var counts struct {
		Total map[string]any `json:"total"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &counts))
	require.Equal(t, 1.0, counts.Total["claimed"])
	require.Equal(t, 1.0, counts.Total["running"])
}

// TestTasksShowResumedFrom: runner tasks show names the snapshot an
// attempt resumed from, and --json gives it with the attempt.
func TestTasksShowResumedFrom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := testwasm.DataDir(t)
	s := teststore.Open(t, dir)
	id := teststore.Queue(t, s, fixture(t, "noop"), tasks.Spec{})
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "runner-b", Max: 1, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	from := &tasks.SnapshotInfo{Size: 3 << 20, Owner: "runner-a", Attempt: 1, Work: 123456, RunTime: 1500 * time.Millisecond, Suspended: true}
	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded,
		Attempt: tasks.Attempt{Outcome: "succeeded", Resumed: true, ResumedFrom: from}}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.NoError(t, s.Close())
	sid := strconv.FormatInt(id, 10)

	out, stderr, code := runInProcess(t, "tasks", "show", sid, "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "attempt 1 resumed from the snapshot of attempt 1 by runner-a (run time 1.5s, 123456 work units, 3.0 MiB)\n")

	out, stderr, code = runInProcess(t, "tasks", "show", sid, "--json", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	var shown struct {
		Attempts []tasks.Attempt `json:"attempts"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &shown))
	require.Len(t, shown.Attempts, 1)
	require.NotNil(t, shown.Attempts[0].ResumedFrom)
	require.Equal(t, int64(123456), shown.Attempts[0].ResumedFrom.Work)
}
