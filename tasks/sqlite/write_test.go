package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// TestWriteContext: a write whose context ends before it commits writes
// nothing and leaves no transaction open on the writer connection.
func TestWriteContext(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stint.db")
	s, err := Open(t.Context(), path, Options{BusyTimeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	h, err := s.PutModule(t.Context(), []byte("\x00asm\x01\x00\x00\x00"))
	require.NoError(t, err)
	count := func() int {
		t.Helper()
		list, err := s.List(t.Context(), tasks.ListFilter{})
		require.NoError(t, err)
		return len(list)
	}

	// Done before it starts.
	done, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err = s.Submit(done, tasks.Spec{Module: h})
	require.ErrorIs(t, err, context.Canceled)

	// Done while the transaction runs: rolled back.
	ctx, cancel := context.WithCancel(t.Context())
	err = s.write(ctx, "test", func(wctx context.Context) error {
		if _, err := s.st.wInsertTask.ExecContext(wctx, h, 0, nil, nil, nil, nil, 1, 0, "q", nil, 0, 0, 0, nil, nil, nil, ""); err != nil {
			return err
		}
		cancel()
		return wctx.Err() // the statements' context does not end
	})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "commit")
	require.Zero(t, count(), "rolled back")

	// fn fails: rolled back.
	boom := errors.New("boom")
	err = s.write(t.Context(), "test", func(wctx context.Context) error {
		if _, err := s.st.wInsertTask.ExecContext(wctx, h, 0, nil, nil, nil, nil, 1, 0, "q", nil, 0, 0, 0, nil, nil, nil, ""); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Zero(t, count(), "rolled back")

	// Waiting for another process's write transaction ends with ctx.
	other, err := Open(t.Context(), path, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, other.Close()) })
	locked := make(chan struct{})
	release := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- other.write(context.Background(), "hold", func(context.Context) error {
			close(locked)
			<-release
			return nil
		})
	}()
	<-locked
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = s.Submit(short, tasks.Spec{Module: h})
	require.Error(t, err)
	t.Log(err)
	require.Less(t, time.Since(start), 5*time.Second, "the wait ends with ctx, not the busy timeout")
	close(release)
	require.NoError(t, <-errc)

	// Nothing is left open: writes work.
	_, _, err = s.Submit(t.Context(), tasks.Spec{Module: h})
	require.NoError(t, err)
	_, _, err = other.Submit(t.Context(), tasks.Spec{Module: h})
	require.NoError(t, err)
	require.Equal(t, 2, count())
}
