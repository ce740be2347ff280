package testutil

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero/sys"
)

// EscapeLayout is the host tree the mount escape tests use, in a fresh
// temp dir T:
//
//	T/secret.txt      SecretText, the host file a guest must not reach
//	T/outdir/         a host directory outside the mount
//	T/outlink         a symlink outside the mount, to secret.txt
//	T/mnt/            the mount
//	T/mnt/in.txt      "inside"
//	T/mnt/sub/        a directory in the mount
//
// OutsideState records everything outside T/mnt, so that a test can check
// that nothing there changed, appeared or vanished.
type EscapeLayout struct {
	Top, Mnt, Secret string
}

// SecretText is what T/secret.txt holds.
const SecretText = "secret"

// NewEscapeLayout makes the layout in a temp dir of t.
func NewEscapeLayout(t *testing.T) EscapeLayout {
	t.Helper()
	top := t.TempDir()
	l := EscapeLayout{Top: top, Mnt: filepath.Join(top, "mnt"), Secret: filepath.Join(top, "secret.txt")}
	require.NoError(t, os.WriteFile(l.Secret, []byte(SecretText), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(top, "outdir"), 0o755))
	require.NoError(t, os.Symlink("secret.txt", filepath.Join(top, "outlink")))
	require.NoError(t, os.MkdirAll(filepath.Join(l.Mnt, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(l.Mnt, "in.txt"), []byte("inside"), 0o644))
	return l
}

// OutsideState describes every file outside the mount: type, mode, size,
// times, link count and content.
func (l EscapeLayout) OutsideState(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(l.Top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == l.Mnt {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := sys.NewStat_t(fi)
		// not atime: reading the state changes it
		fmt.Fprintf(&b, "%s %v nlink=%d mtim=%d ctim=%d", p, st.Mode, st.Nlink, st.Mtim, st.Ctim)
		switch {
		case fi.Mode().IsRegular():
			content, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %q", content)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " -> %s", target)
		}
		b.WriteByte('\n')
		return nil
	})
	require.NoError(t, err)
	return b.String()
}

// MountHasSecret reports whether a file in the mount holds SecretText (a
// hard link to the secret, or a copy).
func (l EscapeLayout) MountHasSecret(t *testing.T) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(l.Mnt, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			found = found || string(b) == SecretText
		}
		return nil
	})
	require.NoError(t, err)
	return found
}
