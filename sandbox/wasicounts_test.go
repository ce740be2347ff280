package sandbox_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// TestWASICounts: a WASI call whose count is over what the runner lets
// through (fd_write's iovecs, poll_oneoff's subscriptions, path_open's
// path bytes) ends the guest
// as a trap naming the call, before it runs; a count at the limit runs.
func TestWASICounts(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "wasi_counts")
	for _, c := range []struct{ export, message string }{
		{"iovecs", "WASI call with a count over its limit: fd_write with 1025 iovecs, over 1024"},
		{"subscriptions", "WASI call with a count over its limit: poll_oneoff with 4097 subscriptions, over 4096"},
		{"path", "WASI call with a count over its limit: path_open with 4097 path bytes, over 4096"},
	} {
		out := run(t, rt, context.Background(), mod, sandbox.Spec{Export: c.export})
		require.Equal(t, sandbox.KindTrapped, out.Kind, "%s: %s", c.export, out)
		require.ErrorIs(t, out.Err, sandbox.ErrWASICount)
		require.Equal(t, c.message, out.Message)
	}
	for _, export := range []string{"iovecs_ok", "path_ok"} {
		out := run(t, rt, context.Background(), mod, sandbox.Spec{Export: export})
		require.Equal(t, sandbox.KindSucceeded, out.Kind, "%s: %s", export, out)
	}
}
