package cachenames

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRead: what is not a record (a temporary file, bytes that are not
// JSON, a record too large, a directory) is skipped, and so is an entry
// that is not a path inside the cache, or that names a record.
func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.Nil(t, Read(os.DirFS(dir)), "no records yet")
	names := filepath.Join(dir, Dir)
	require.NoError(t, os.MkdirAll(filepath.Join(names, "sub"), 0o700))
	write := func(name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(names, name), []byte(text), 0o600))
	}
	write("good", `{"sha256":"ab","entries":["stint-prepared/k","wazero-v-x/k","../up","/abs","stint-names/other","a/../b",""],"names":["n"]}`)
	write(".good.tmp1234", `{"sha256":"cd"}`)
	write("junk", "not json")
	write("huge", `{"sha256":"ef","names":["`+strings.Repeat("x", maxRecord)+`"]}`)
	recs := Read(os.DirFS(dir))
	require.Len(t, recs, 1)
	require.Equal(t, Record{File: Dir + "/good", SHA256: "ab", Entries: []string{"stint-prepared/k", "wazero-v-x/k"}, Names: []string{"n"}}, recs[0])
}

// TestWriteLoad: a record written (0600 in a 0700 Dir) loads as it was,
// its File set; a missing one is fs.ErrNotExist.
func TestWriteLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := [32]byte{1, 2, 3}
	_, err := Load(dir, key)
	require.ErrorIs(t, err, os.ErrNotExist)
	rec := Record{SHA256: "ab", Entries: []string{"stint-prepared/x"}, Names: []string{"/a.wasm"}}
	require.NoError(t, Write(dir, key, rec))
	got, err := Load(dir, key)
	require.NoError(t, err)
	rec.File = Path(key)
	require.Equal(t, rec, got)
	for p, mode := range map[string]os.FileMode{filepath.Join(dir, Dir): 0o700, filepath.Join(dir, filepath.FromSlash(Path(key))): 0o600} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Equal(t, mode, fi.Mode().Perm(), p)
	}
}

// TestAddName: the latest name first (Latest), each once, at most MaxNames, each
// cut at MaxNameLen on a character's boundary; an empty name or the one
// already first changes nothing.
func TestAddName(t *testing.T) {
	t.Parallel()
	var rec Record
	require.Equal(t, "", rec.Latest())
	require.False(t, rec.AddName(""))
	require.True(t, rec.AddName("a"))
	require.Equal(t, "a", rec.Latest())
	require.False(t, rec.AddName("a"), "already first")
	require.True(t, rec.AddName("b"))
	require.True(t, rec.AddName("a"))
	require.Equal(t, []string{"a", "b"}, rec.Names)
	for i := range 12 {
		rec.AddName(fmt.Sprint("n", i))
	}
	require.Len(t, rec.Names, MaxNames)
	require.Equal(t, "n11", rec.Names[0])
	require.Equal(t, "n4", rec.Names[MaxNames-1])
	require.True(t, rec.AddName(strings.Repeat("é", 600)))
	require.Len(t, rec.Names[0], MaxNameLen)
	require.False(t, rec.AddName(strings.Repeat("é", 700)), "cut, it is the name already first")
}
