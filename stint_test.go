package stint_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

const bound = 60 * time.Second

func openRunner(t *testing.T, cfg stint.Config) *stint.Runner {
	t.Helper()
	if cfg.Store == "" {
		cfg.Store = filepath.Join(t.TempDir(), "stint.db")
	}
	r, err := stint.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	return r
}

// startWatching subscribes to r's events, starts r and stores the named
// fixture: a context bound by bound, the events and the fixture's hash.
// The context is cancelled and the subscription stopped when t ends.
func startWatching(t *testing.T, r *stint.Runner, fixture string) (context.Context, <-chan stint.Event, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	events, stop := r.Subscribe()
	t.Cleanup(stop)
	require.NoError(t, r.Start(ctx))
	sha, err := r.PutModule(ctx, wat.MustLoad(fixture))
	require.NoError(t, err)
	return ctx, events, sha
}

// TestSubscribeNeverBlocksThePool: a subscriber that reads nothing, with
// a buffer of one, does not hold up the pool: every task ends, and the
// events that found the buffer full are counted as dropped.
func TestSubscribeNeverBlocksThePool(t *testing.T) {
	t.Parallel()
	r := openRunner(t, stint.Config{EventBuffer: 1})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	events, _ := r.Subscribe()
	require.NoError(t, r.Start(ctx))
	sha, err := r.PutModule(ctx, wat.MustLoad("noop"))
	require.NoError(t, err)
	var ids []int64
	for range 5 {
		task, _, err := r.Submit(ctx, tasks.Spec{Module: sha})
		require.NoError(t, err)
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		task, err := r.Wait(ctx, id)
		require.NoError(t, err)
		require.Equal(t, tasks.StateSucceeded, task.State)
	}
	require.Equal(t, stint.EventStarted, (<-events).Kind)
	require.Positive(t, r.Dropped())
}

// TestCloseEndsSubscriptions: Close closes every subscription's channel;
// one taken after Close is closed at once.
func TestCloseEndsSubscriptions(t *testing.T) {
	t.Parallel()
	r, err := stint.Open(context.Background(), stint.Config{Store: filepath.Join(t.TempDir(), "stint.db")})
	require.NoError(t, err)
	events, _ := r.Subscribe()
	require.NoError(t, r.Close(context.Background()))
	_, open := <-events
	require.False(t, open)
	late, _ := r.Subscribe()
	_, open = <-late
	require.False(t, open)
	require.NoError(t, r.Close(context.Background()), "twice")
}

// TestRunnerUnderACoordinator: a Runner is the coordinator's workload and
// its hooks close it; a second Open of the SQLite store is refused while
// the first holds it.
func TestRunnerUnderACoordinator(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	ctx := context.Background()
	r, err := stint.Open(ctx, stint.Config{Store: "sqlite:" + path})
	require.NoError(t, err)
	_, err = stint.Open(ctx, stint.Config{Store: path})
	require.ErrorIs(t, err, tasks.ErrLocked)

	coord, err := shutdown.New(shutdown.Config{}, shutdown.Options{})
	require.NoError(t, err)
	require.NoError(t, coord.Register(r))
	for _, h := range r.Hooks() {
		require.NoError(t, coord.AddHook(h))
	}
	require.NoError(t, r.Start(ctx))
	coord.Shutdown(ctx)
	<-coord.Done()
	again, err := stint.Open(ctx, stint.Config{Store: path})
	require.NoError(t, err, "the store hook released the store")
	require.NoError(t, again.Close(ctx))
}

// TestEventsLabelsAndStderr: a failing task's events come in order
// (started, then ended with its state and attempt), the attempt carries
// the tail of the guest's stderr (its last MaxStderrTail bytes: the last
// line is there), and the task keeps its labels.
func TestEventsLabelsAndStderr(t *testing.T) {
	t.Parallel()
	r := openRunner(t, stint.Config{})
	ctx, events, sha := startWatching(t, r, "seams_stderr_fail")
	labels := map[string]string{"tenant": "acme", "job": "nightly"}
	task, _, err := r.Submit(ctx, tasks.Spec{Module: sha, MaxAttempts: 1, Labels: labels})
	require.NoError(t, err)

	started := <-events
	require.Equal(t, stint.EventStarted, started.Kind)
	require.Equal(t, task.ID, started.TaskID)
	ended := <-events
	require.Equal(t, stint.EventEnded, ended.Kind)
	require.Equal(t, tasks.StateDead, ended.State)
	require.Equal(t, "failed", ended.Attempt.Outcome)
	require.Equal(t, 1, ended.Attempt.ExitCode)
	require.Len(t, ended.Attempt.Stderr, tasks.MaxStderrTail)
	require.True(t, strings.HasSuffix(ended.Attempt.Stderr, "eee\nboom: the last line\n"), ended.Attempt.Stderr[len(ended.Attempt.Stderr)-40:])

	got, err := r.Wait(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, labels, got.Labels)
	atts, err := r.Attempts(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, ended.Attempt.Stderr, atts[0].Stderr, "the store keeps what the event said")
}

// TestStoreSync: Config.StoreSync reaches the SQLite store; an unknown
// setting is refused before anything is opened.
func TestStoreSync(t *testing.T) {
	t.Parallel()
	r := openRunner(t, stint.Config{StoreSync: "full"})
	s, ok := r.Store().(interface{ Sync() sqlite.Sync })
	require.True(t, ok, "%T", r.Store())
	require.Equal(t, sqlite.SyncFull, s.Sync())
	path := filepath.Join(t.TempDir(), "stint.db")
	_, err := stint.Open(context.Background(), stint.Config{Store: path, StoreSync: "always"})
	require.ErrorContains(t, err, `Config.StoreSync "always": want normal or full`)
	require.NoFileExists(t, path)
}

// TestEndedEventCarriesTheResult: the ended event of a task that succeeded
// carries its result, the bytes the store holds; a failed task's carries
// none.
func TestEndedEventCarriesTheResult(t *testing.T) {
	t.Parallel()
	r := openRunner(t, stint.Config{})
	ctx, events, sha := startWatching(t, r, "upper")
	ok, _, err := r.Submit(ctx, tasks.Spec{Module: sha, Input: []byte("shout\n"), MaxAttempts: 1})
	require.NoError(t, err)
	bad, _, err := r.Submit(ctx, tasks.Spec{Module: sha, Input: []byte("bin\x00ary"), MaxAttempts: 1})
	require.NoError(t, err)

	ended := map[int64]stint.Event{}
	for len(ended) < 2 {
		e := <-events
		if e.Kind == stint.EventEnded {
			ended[e.TaskID] = e
		}
	}
	require.Equal(t, tasks.StateSucceeded, ended[ok.ID].State)
	require.Equal(t, "SHOUT\n", string(ended[ok.ID].Result))
	stored, err := r.Wait(ctx, ok.ID)
	require.NoError(t, err)
	require.Equal(t, stored.Result, ended[ok.ID].Result, "the event carries what the store holds")
	require.Equal(t, tasks.StateDead, ended[bad.ID].State)
	require.Nil(t, ended[bad.ID].Result)
}
