//go:build unix

package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stretchr/testify/require"
)

// A guest that opens a FIFO the host left in its mount (stopping_fifo)
// gets an error at once and ends on its own, well within its timeout: no
// run is abandoned, no goroutine strays.
func TestMountFIFOGuestEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, mod := fixtureRuntime(t, "stopping_fifo")
	dir := testutil.SpecialDir(t)
	for _, writable := range []bool{false, true} {
		out, err := rt.Run(ctx, mod, Spec{Limits: Limits{Timeout: time.Hour},
			Mounts: []Mount{{HostPath: dir, GuestPath: "/data", Writable: writable}}})
		require.NoError(t, err)
		require.Equal(t, KindFailed, out.Kind, "%s", out)
		require.EqualValues(t, 1, out.ExitCode, "the guest's open failed")
		require.False(t, out.Abandoned)
	}
	st := rt.Stats()
	require.Zero(t, st.Stray)
	require.Zero(t, st.Abandoned)
}
