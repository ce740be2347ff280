package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// TestTestdataUpToDate: every testdata/*.wasm is what build.sh makes of
// its .wat.
func TestTestdataUpToDate(t *testing.T) {
	bin, err := exec.LookPath("wat2wasm")
	if err != nil {
		t.Skip("wat2wasm is not on PATH")
	}
	wats, err := filepath.Glob("testdata/*.wat")
	require.NoError(t, err)
	require.NotEmpty(t, wats)
	tmp := t.TempDir()
	for _, wat := range wats {
		name := strings.TrimSuffix(filepath.Base(wat), ".wat")
		out := filepath.Join(tmp, name+".wasm")
		msg, err := exec.Command(bin, "--debug-names", wat, "-o", out).CombinedOutput()
		require.NoError(t, err, "wat2wasm %s: %s", wat, msg)
		want, err := os.ReadFile(out)
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, benchModule(name)), "testdata/%s.wasm is stale: run internal/bench/testdata/build.sh", name)
	}
}

// TestStartedFixtures: the shutdown benchmark's guests save a checkpoint
// first; started_stop_aware then exits 75 on a stop request, started_loop
// only ends by force.
func TestStartedFixtures(t *testing.T) {
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Close(ctx)) }()
	for _, c := range []struct {
		name string
		kind sandbox.Kind
	}{{"started_stop_aware", sandbox.KindInterrupted}, {"started_loop", sandbox.KindForced}} {
		mod, err := rt.Compile(ctx, benchModule(c.name))
		require.NoError(t, err)
		runCtx, cancel := context.WithCancel(ctx)
		stop := make(chan struct{})
		var saved []byte
		out, err := rt.Run(runCtx, mod, sandbox.Spec{Stop: stop, SaveCheckpoint: func(_ context.Context, blob []byte) error {
			saved = bytes.Clone(blob)
			if c.kind == sandbox.KindInterrupted {
				close(stop)
			} else {
				cancel() // during the save: the run is forced and the save ignored
			}
			return nil
		}})
		cancel()
		require.NoError(t, err)
		require.Equal(t, c.kind, out.Kind, c.name)
		require.Equal(t, []byte("s"), saved, c.name)
	}
}
