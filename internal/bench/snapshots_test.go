package bench

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSnapshotEveryDefault checks that the interval the snapshots
// benchmark prices a snapshot at is snapshots.every's default in
// cmd/runner's configuration.
func TestSnapshotEveryDefault(t *testing.T) {
	src, err := os.ReadFile("../../cmd/runner/config.go")
	require.NoError(t, err)
	m := regexp.MustCompile(`\{"snapshots\.every", "([^"]*)"`).FindSubmatch(src)
	require.NotNil(t, m, "cmd/runner/config.go has no snapshots.every key")
	d, err := time.ParseDuration(string(m[1]))
	require.NoError(t, err)
	require.Equal(t, d, defaultSnapshotEvery, "snapshots.every's default moved: change defaultSnapshotEvery (internal/bench/snapshots.go)")
}

// TestSnapshotsQuick runs the snapshots benchmark in quick mode: its
// tables come out, the goal row among them (or, without clang-14, the
// note that the long task was not measured).
func TestSnapshotsQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs guests for a few seconds")
	}
	res, err := Snapshots(context.Background(), Options{Quick: true, CacheDir: t.TempDir()}.WithDefaults())
	require.NoError(t, err)
	var md strings.Builder
	res.Markdown(&md)
	out := md.String()
	require.Contains(t, out, "Short tasks: the queue's tasks/s with snapshots on and off")
	if !strings.Contains(out, "NOT MEASURED") {
		require.Contains(t, out, "goal (issue 39, item 8): at most 2%")
	}
	t.Log(out)
}
