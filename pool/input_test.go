package pool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
)

// TestPoolInputFromConfig: with Config.Input, each attempt's stdin is what
// it gives, not the stored input; an error ends the task dead at its first
// attempt, outcome input_unavailable, with the error as the reason.
func TestPoolInputFromConfig(t *testing.T) {
	t.Parallel()
	inputs := map[string][]byte{"a": []byte("from outside\n"), "empty": {}}
	f := newFixture(t, pool.Config{Input: func(_ context.Context, task tasks.Task) ([]byte, error) {
		in, ok := inputs[task.Labels["in"]]
		if !ok {
			return nil, errors.New("the input file changed since it was submitted")
		}
		return in, nil
	}})
	ctx := context.Background()
	outside := f.submit(t, "upper", tasks.Spec{Input: []byte("stored\n"), Labels: map[string]string{"in": "a"}})
	empty := f.submit(t, "upper", tasks.Spec{Input: []byte("stored\n"), Labels: map[string]string{"in": "empty"}})
	gone := f.submit(t, "upper", tasks.Spec{MaxAttempts: 3, Labels: map[string]string{"in": "gone"}})

	got := f.wait(t, outside.ID)
	require.Equal(t, tasks.StateSucceeded, got.State)
	require.Equal(t, "FROM OUTSIDE\n", string(got.Result))
	got = f.wait(t, empty.ID)
	require.Equal(t, tasks.StateSucceeded, got.State)
	require.Empty(t, got.Result, "an empty input given is the input, not the stored one")

	got = f.wait(t, gone.ID)
	require.Equal(t, tasks.StateDead, got.State)
	as, err := f.store.Attempts(ctx, gone.ID)
	require.NoError(t, err)
	require.Len(t, as, 1, "dead at once, not retried")
	require.Equal(t, string(pool.KindInputUnavailable), as[0].Outcome)
	require.Contains(t, as[0].Reason, "the input file changed since it was submitted")
}
