package batch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/shutdown"
)

func config(t *testing.T, module string, n int) batch.Config {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	require.NoError(t, os.Mkdir(in, 0o755))
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(in, fmt.Sprintf("f%03d.txt", i)), fmt.Appendf(nil, "input %d\n", i), 0o644))
	}
	return batch.Config{Module: wat.MustLoad(module), In: in, Out: filepath.Join(dir, "out"), Workers: 2,
		Runner: stint.Config{Store: "sqlite:" + filepath.Join(dir, "stint.db")}}
}

// A check before any work is an *InputError, and nothing is written; an
// Out that is In is an output collision.
func TestRunInputErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := config(t, "upper", 1)
	missing := c
	missing.In = filepath.Join(t.TempDir(), "nothing")
	_, err := batch.Run(ctx, missing)
	var ie *batch.InputError
	require.ErrorAs(t, err, &ie)
	require.NotErrorIs(t, err, batch.ErrOutputCollision)

	same := c
	same.Out = c.In
	_, err = batch.Run(ctx, same)
	require.ErrorAs(t, err, &ie)
	require.ErrorIs(t, err, batch.ErrOutputCollision)
	require.Contains(t, err.Error(), "is the folder of the inputs")

	bad := c
	bad.Module = []byte("not wasm")
	_, err = batch.Run(ctx, bad)
	require.ErrorAs(t, err, &ie)
	require.Contains(t, err.Error(), "does not compile")
	_, err = os.Stat(c.Out)
	require.ErrorIs(t, err, os.ErrNotExist, "nothing written")
}

// OnRun gets the batch's Status and OnDone each input; the Summary
// counts them.
func TestRunCallbacks(t *testing.T) {
	t.Parallel()
	c := config(t, "upper", 20)
	var mu sync.Mutex
	done := map[string]bool{}
	c.OnDone = func(r batch.Result) {
		mu.Lock()
		defer mu.Unlock()
		require.Nil(t, r.Failure)
		done[r.Name] = true
	}
	ran, stopped := false, false
	c.OnRun = func(st *batch.Status) func() {
		ran = true
		require.Equal(t, 20, st.Counts().Total)
		require.Equal(t, batch.Queue(c.Out), st.Queue())
		return func() { stopped = true }
	}
	sum, err := batch.Run(context.Background(), c)
	require.NoError(t, err)
	require.True(t, ran)
	require.True(t, stopped)
	require.Equal(t, 20, sum.Succeeded)
	require.Len(t, done, 20)
	got, err := os.ReadFile(filepath.Join(c.Out, "f007.txt"))
	require.NoError(t, err)
	require.Equal(t, "INPUT 7\n", string(got))
}

// A cancelled ctx stops the batch: a *StoppedError, its Summary counting
// what is left; the same Config resumes it.
func TestRunStopped(t *testing.T) {
	t.Parallel()
	c := config(t, "sleep", 4)
	c.Shutdown = shutdown.Config{Drain: 10 * time.Millisecond, Cancel: 10 * time.Millisecond, ForceWait: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	c.OnRun = func(*batch.Status) func() { cancel(); return nil }
	sum, err := batch.Run(ctx, c)
	var se *batch.StoppedError
	require.ErrorAs(t, err, &se)
	require.ErrorIs(t, err, batch.ErrStopped)
	require.True(t, sum.Stopped)
	require.Equal(t, sum.Left, se.Left)
	require.Positive(t, sum.Left)
	require.False(t, errors.Is(err, batch.ErrUnrecorded))
}

// TestCountsNeverAheadOfDone: what the bar shows as ok (this run's
// successes and earlier runs') never passes what it shows as done
// (Total minus Left), read while a resumed batch runs, on every read
// (issue 41, item 14: "(80/3001) ok 139").
func TestCountsNeverAheadOfDone(t *testing.T) {
	t.Parallel()
	c := config(t, "upper", 60)
	_, err := batch.Run(context.Background(), c)
	require.NoError(t, err)
	for i := 60; i < 200; i++ { // new inputs: the next run resumes with 60 done
		require.NoError(t, os.WriteFile(filepath.Join(c.In, fmt.Sprintf("f%03d.txt", i)), fmt.Appendf(nil, "input %d\n", i), 0o644))
	}
	var (
		mu    sync.Mutex
		reads int
		bad   []batch.Counts
	)
	c.OnRun = func(st *batch.Status) func() {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				k := st.Counts()
				mu.Lock()
				reads++
				if k.Succeeded+k.AlreadyDone > k.Total-k.Left {
					bad = append(bad, k)
				}
				mu.Unlock()
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
		return func() { close(stop); <-done }
	}
	sum, err := batch.Run(context.Background(), c)
	require.NoError(t, err)
	require.Equal(t, 140, sum.Succeeded)
	require.Equal(t, 60, sum.AlreadyDone)
	require.NotZero(t, reads)
	require.Empty(t, bad, "ok ran ahead of done in %d of %d reads", len(bad), reads)
}
