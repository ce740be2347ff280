package tasks_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// TestCheckpointOf: none (size -1) and left out of a claim are nil; one
// that is there is never nil, even empty.
func TestCheckpointOf(t *testing.T) {
	t.Parallel()
	require.Nil(t, tasks.CheckpointOf(-1, nil))
	require.Nil(t, tasks.CheckpointOf(tasks.ClaimInline+1, nil))
	require.Equal(t, []byte{}, tasks.CheckpointOf(0, nil))
	require.Equal(t, []byte("ck"), tasks.CheckpointOf(2, []byte("ck")))
	big := make([]byte, tasks.ClaimInline+1)
	require.Equal(t, big, tasks.CheckpointOf(len(big), big))
}

// TestDefaultOutcome names an attempt whose completion gave no outcome.
func TestDefaultOutcome(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		st      tasks.State
		counted bool
		want    string
	}{
		{tasks.StateSucceeded, true, "succeeded"}, {tasks.StateCancelled, true, "cancelled"},
		{tasks.StateQueued, true, "failed"}, {tasks.StateDead, true, "failed"},
		{tasks.StateQueued, false, "interrupted"},
	} {
		require.Equal(t, c.want, tasks.DefaultOutcome(c.st, c.counted), "%s counted=%v", c.st, c.counted)
	}
}

// TestCompletionResolved fills what a completion left empty and keeps
// what it gave; a result is kept only for a success.
func TestCompletionResolved(t *testing.T) {
	now := time.Unix(1000, 0)
	r := tasks.Completion{State: tasks.StateQueued, Result: []byte("x"), Attempt: tasks.Attempt{Counted: true}}.Resolved(now)
	require.Equal(t, now, r.Attempt.EndedAt)
	require.Equal(t, now, r.RunAt)
	require.Equal(t, "failed", r.Attempt.Outcome)
	require.Nil(t, r.Result)

	later, ended := now.Add(time.Minute), now.Add(-time.Second)
	r = tasks.Completion{State: tasks.StateSucceeded, Result: []byte("x"), RunAt: later,
		Attempt: tasks.Attempt{Outcome: "mine", EndedAt: ended}}.Resolved(now)
	require.Equal(t, ended, r.Attempt.EndedAt)
	require.Equal(t, later, r.RunAt)
	require.Equal(t, "mine", r.Attempt.Outcome)
	require.Equal(t, []byte("x"), r.Result)
}

// TestLimitsJSONWrite: a timeout is written as a duration string and read back
// from one or from nanoseconds (as earlier versions wrote it).
func TestLimitsJSONWrite(t *testing.T) {
	l := tasks.Limits{MemoryBytes: 64 << 20, Timeout: 90 * time.Second}
	b, err := json.Marshal(l)
	require.NoError(t, err)
	require.JSONEq(t, `{"memory_bytes":67108864,"timeout":"1m30s"}`, string(b))
	var back tasks.Limits
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, l, back)
	require.NoError(t, json.Unmarshal([]byte(`{"timeout":90000000000}`), &back))
	require.Equal(t, 90*time.Second, back.Timeout)
	b, err = json.Marshal(tasks.Limits{})
	require.NoError(t, err)
	require.Equal(t, `{}`, string(b))
}
