package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks/sqlite"
)

// TestSync: Options.Sync sets the synchronous pragma of every connection
// of the store (1 NORMAL, 2 FULL), in WAL mode; the default is normal.
func TestSync(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sync sqlite.Sync
		want string
	}{
		{"", "synchronous=1 journal_mode=wal"},
		{sqlite.SyncNormal, "synchronous=1 journal_mode=wal"},
		{sqlite.SyncFull, "synchronous=2 journal_mode=wal"},
	} {
		s := open(t, filepath.Join(t.TempDir(), "stint.db"), sqlite.Options{Sync: tc.sync, ReadConns: 3})
		if tc.sync == "" {
			require.Equal(t, sqlite.SyncNormal, s.Sync())
		} else {
			require.Equal(t, tc.sync, s.Sync())
		}
		writer, readers, err := sqlite.Pragmas(t.Context(), s)
		require.NoError(t, err)
		require.Equal(t, tc.want, writer, "writer, sync %q", tc.sync)
		require.Equal(t, []string{tc.want, tc.want, tc.want}, readers, "readers, sync %q", tc.sync)
	}
	_, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "x.db"), sqlite.Options{Sync: "extra"})
	require.ErrorContains(t, err, `sync "extra": want normal or full`)
	require.Error(t, sqlite.Options{Sync: "FULL"}.Validate())
}
