//go:build unix

package mountfs

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// A ".." in a path given to the mount is cleaned lexically against the
// mount's root: what stays inside resolves, what climbs above is refused.
func TestCleanMountPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
		dirs     []string
		errno    experimentalsys.Errno
	}{
		// no "..": as before, untouched
		{in: "", want: "."},
		{in: "/", want: "."},
		{in: ".", want: "."},
		{in: "./", want: "./"},
		{in: "a", want: "a"},
		{in: "/a/b/", want: "a/b/"},
		{in: "d/./f.txt", want: "d/./f.txt"},
		{in: "a/.", want: "a/."},
		{in: "..a/b..", want: "..a/b.."},

		// ".." that stays inside
		{in: "a/../b", want: "b", dirs: []string{"a"}},
		{in: "a/../b/", want: "b/", dirs: []string{"a"}},
		{in: "a/b/..", want: "a/.", dirs: []string{"a/b"}},
		{in: "a/b/../", want: "a/.", dirs: []string{"a/b"}},
		{in: "a/..", want: ".", dirs: []string{"a"}},
		{in: "/a/../", want: ".", dirs: []string{"a"}},
		{in: "a/b/../../c", want: "c", dirs: []string{"a/b"}},
		{in: "a/../b/../c", want: "c", dirs: []string{"a", "b"}},
		{in: "./a//./../b/.", want: "b/.", dirs: []string{"a"}},
		{in: "a/b/../.", want: "a/.", dirs: []string{"a/b"}},

		// ".." that climbs above the root: refused, wherever it comes back
		{in: "..", errno: experimentalsys.EPERM},
		{in: "/..", errno: experimentalsys.EPERM},
		{in: "../", errno: experimentalsys.EPERM},
		{in: "./..", errno: experimentalsys.EPERM},
		{in: "../x", errno: experimentalsys.EPERM},
		{in: "a/../..", errno: experimentalsys.EPERM},
		{in: "a/../../mnt/a", errno: experimentalsys.EPERM},
		{in: "a/b/../../../x", errno: experimentalsys.EPERM},
	} {
		got, dirs, errno := cleanMountPath(c.in)
		require.Equal(t, c.errno, errno, "%q", c.in)
		require.Equal(t, c.want, got, "%q", c.in)
		require.Equal(t, c.dirs, dirs, "%q", c.in)
	}
}

// dotDotTree is T/mnt (escapeLayout) with sub/x/, sub/f.txt, a guest's
// symlink "ls" to "sub/x" and one "esc" to ".." (out of the mount).
func dotDotTree(t *testing.T, useAt bool) (escapeLayout, *FS) {
	t.Helper()
	l := newEscapeLayout(t)
	require.NoError(t, os.Mkdir(filepath.Join(l.Mnt, "sub", "x"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(l.Mnt, "sub", "f.txt"), []byte("sub file"), 0o644))
	m := openTestMount(t, l.Mnt, useAt)
	require.Zero(t, m.Symlink("sub/x", "ls"))
	require.Zero(t, m.Symlink("..", "esc"))
	return l, m
}

// names lists a directory opened in fsys at p, sorted: "d/" for a
// directory, "l@" for a symlink.
func names(t *testing.T, fsys experimentalsys.FS, p string) string {
	t.Helper()
	f, errno := fsys.OpenFile(p, rdonly|isdir, 0)
	require.Zero(t, errno, p)
	defer f.Close()
	ents, errno := f.Readdir(-1)
	require.Zero(t, errno, p)
	var out []string
	for _, e := range ents {
		switch {
		case e.Type.IsDir():
			out = append(out, e.Name+"/")
		case e.Type&fs.ModeSymlink != 0:
			out = append(out, e.Name+"@")
		default:
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// Stat, open and readdir through paths with ".." that stay inside the
// mount: they name what the lexically cleaned path names. "." is the
// mount's directory. ".." of the root is refused (EPERM, as before): the
// mount has no parent a guest may see, and calling it the root itself
// would make "/data/.." the mount where the guest expects the directory
// that holds it. Nothing outside changes.
func TestMountFSDotDotInside(t *testing.T) {
	t.Parallel()
	eachVariant(t, func(t *testing.T, useAt bool) {
		l, m := dotDotTree(t, useAt)
		before := l.OutsideState(t)
		ino := func(p string) uint64 {
			t.Helper()
			st, errno := m.Stat(p)
			require.Zero(t, errno, p)
			return st.Ino
		}
		hostIno := func(p string) uint64 {
			t.Helper()
			st, errno := sysfs.DirFS(l.Mnt).Stat(p)
			require.Zero(t, errno, p)
			return st.Ino
		}
		root, sub, x := hostIno("."), hostIno("sub"), hostIno("sub/x")

		// stat and lstat
		for p, want := range map[string]uint64{
			".": root, "": root, "/": root, "./": root,
			"sub/..": root, "sub/../": root, "sub/x/../..": root, "sub/./..": root,
			"sub/x/..": sub, "sub/x/../": sub, "sub/../sub": sub, "/sub/x/../../sub/": sub,
			"sub/../sub/x": x, "ls/../sub/x": x,
			"ls/..": root, // lexical: the root, not sub (ls's target's parent)
		} {
			require.Equal(t, want, ino(p), p)
			st, errno := m.Lstat(p)
			require.Zero(t, errno, p)
			require.Equal(t, want, st.Ino, "lstat %s", p)
			require.True(t, st.Mode.IsDir(), p)
		}
		require.Equal(t, hostIno("in.txt"), ino("sub/../in.txt"))
		require.Equal(t, hostIno("sub/f.txt"), ino("sub/x/../f.txt"))

		// open and read
		for _, p := range []string{"sub/../in.txt", "sub/x/../../in.txt", "/sub/./../in.txt"} {
			errno, got := readFile(m, p, rdonly)
			require.Zero(t, errno, p)
			require.Equal(t, "inside", got, p)
		}
		errno, got := readFile(m, "sub/x/../f.txt", rdonly)
		require.Zero(t, errno)
		require.Equal(t, "sub file", got)

		// readdir of a directory opened through ".."
		rootNames := "esc@ in.txt ls@ sub/"
		require.Equal(t, rootNames, names(t, m, "."))
		for _, p := range []string{"sub/..", "sub/x/../..", "ls/..", "sub/../"} {
			require.Equal(t, rootNames, names(t, m, p), p)
		}
		require.Equal(t, "f.txt x/", names(t, m, "sub/x/.."))
		require.Equal(t, "f.txt x/", names(t, m, "sub/x/../../sub"))
		require.Equal(t, "", names(t, m, "sub/../sub/x"))

		// what a ".." climbs out of is looked up, beneath the mount, as
		// the kernel would: it must be a directory
		for p, want := range map[string]experimentalsys.Errno{
			"missing/..":       experimentalsys.ENOENT,
			"in.txt/..":        experimentalsys.ENOTDIR,
			"sub/f.txt/../x":   experimentalsys.ENOTDIR,
			"esc/..":           eperm, // esc leads out: refused, though "." is inside
			"esc/../in.txt":    eperm,
			"sub/../esc/../..": eperm,
		} {
			_, errno := m.Stat(p)
			require.Equal(t, want, errno, p)
			errno, _ = readFile(m, p, rdonly)
			require.Equal(t, want, errno, "open %s", p)
		}

		// ".." above the root: refused, even one that would come back in
		for _, p := range []string{"..", "/..", "../", "sub/../..", "sub/x/../../..", "../mnt/in.txt", "../mnt"} {
			_, errno := m.Stat(p)
			require.Equal(t, eperm, errno, p)
			_, errno = m.Lstat(p)
			require.Equal(t, eperm, errno, "lstat %s", p)
			errno, _ = readFile(m, p, rdonly)
			require.Equal(t, eperm, errno, "open %s", p)
			_, errno = m.OpenFile(p, rdonly|isdir, 0)
			require.Equal(t, eperm, errno, "opendir %s", p)
		}
		requireUntouched(t, l, before)
	})
}

// Writes through ".." that stays inside land inside; an operation on a
// last ".." fails as the kernel's does; writes through a ".." above the
// root are refused and change nothing outside.
func TestMountFSDotDotWrites(t *testing.T) {
	t.Parallel()
	eachVariant(t, func(t *testing.T, useAt bool) {
		l, m := dotDotTree(t, useAt)
		before := l.OutsideState(t)

		f, errno := m.OpenFile("sub/x/../../new.txt", wronly|creat|excl, 0o644)
		require.Zero(t, errno)
		_, errno = f.Write([]byte("new"))
		require.Zero(t, errno)
		require.Zero(t, f.Close())
		b, err := os.ReadFile(filepath.Join(l.Mnt, "new.txt"))
		require.NoError(t, err)
		require.Equal(t, "new", string(b))
		require.Zero(t, m.Mkdir("sub/../made", 0o755))
		require.Zero(t, m.Rename("sub/x/../../new.txt", "made/../sub/x/moved.txt"))
		require.Zero(t, m.Link("sub/x/moved.txt", "sub/x/../../hard"))
		require.Zero(t, m.Symlink("in.txt", "sub/../sl"))
		require.Zero(t, m.Chmod("sub/../hard", 0o600))
		require.Zero(t, m.Utimens("sub/../hard", 1_000_000_007, experimentalsys.UTIME_OMIT))
		target, errno := m.Readlink("sub/x/../../sl")
		require.Zero(t, errno)
		require.Equal(t, "in.txt", target)
		require.Zero(t, m.Unlink("made/../hard"))
		require.Zero(t, m.Rmdir("sub/../made"))
		require.Equal(t, "f.txt x/", names(t, m, "sub"))
		require.Equal(t, "moved.txt", names(t, m, "sub/x"))

		// a last ".." names no entry to make, remove or rename
		for name, op := range map[string]func() experimentalsys.Errno{
			"mkdir":          func() experimentalsys.Errno { return m.Mkdir("sub/x/..", 0o755) },
			"rmdir":          func() experimentalsys.Errno { return m.Rmdir("sub/x/..") },
			"unlink":         func() experimentalsys.Errno { return m.Unlink("sub/x/..") },
			"rename from":    func() experimentalsys.Errno { return m.Rename("sub/x/..", "y") },
			"rename to":      func() experimentalsys.Errno { return m.Rename("in.txt", "sub/x/..") },
			"link to":        func() experimentalsys.Errno { return m.Link("in.txt", "sub/x/..") },
			"symlink at":     func() experimentalsys.Errno { return m.Symlink("in.txt", "sub/x/..") },
			"rmdir root":     func() experimentalsys.Errno { return m.Rmdir("sub/..") },
			"rename root":    func() experimentalsys.Errno { return m.Rename("sub/..", "y") },
			"mkdir missing":  func() experimentalsys.Errno { return m.Mkdir("missing/..", 0o755) },
			"rmdir escaping": func() experimentalsys.Errno { return m.Rmdir("esc/..") },
		} {
			want := map[string]experimentalsys.Errno{
				"mkdir": experimentalsys.EEXIST, "rmdir": experimentalsys.ENOTEMPTY, "unlink": experimentalsys.EISDIR,
				"rename from": experimentalsys.EIO, "rename to": experimentalsys.EIO, // EBUSY, which wazero has no name for
				"link to": experimentalsys.EEXIST, "symlink at": experimentalsys.EEXIST,
				"rmdir root": experimentalsys.ENOTEMPTY, "rename root": experimentalsys.EIO,
				"mkdir missing": experimentalsys.ENOENT, "rmdir escaping": eperm,
			}[name]
			require.Equal(t, want, op(), name)
		}
		require.Equal(t, "f.txt x/", names(t, m, "sub"))

		// above the root
		for name, op := range map[string]func() experimentalsys.Errno{
			"create": func() experimentalsys.Errno {
				errno, _ := readFile(m, "sub/../../created.txt", wronly|creat)
				return errno
			},
			"truncate": func() experimentalsys.Errno {
				errno, _ := readFile(m, "../secret.txt", wronly|trunc)
				return errno
			},
			"mkdir":    func() experimentalsys.Errno { return m.Mkdir("sub/../../newdir", 0o755) },
			"rmdir":    func() experimentalsys.Errno { return m.Rmdir("sub/../../outdir") },
			"rmdir ..": func() experimentalsys.Errno { return m.Rmdir("..") },
			"unlink":   func() experimentalsys.Errno { return m.Unlink("sub/../../secret.txt") },
			"rename in": func() experimentalsys.Errno {
				return m.Rename("sub/../../secret.txt", "stolen")
			},
			"rename out": func() experimentalsys.Errno { return m.Rename("in.txt", "sub/../../planted") },
			"link in":    func() experimentalsys.Errno { return m.Link("sub/../../secret.txt", "hard") },
			"link out":   func() experimentalsys.Errno { return m.Link("in.txt", "../planted") },
			"symlink":    func() experimentalsys.Errno { return m.Symlink("x", "sub/../../planted") },
			"chmod":      func() experimentalsys.Errno { return m.Chmod("sub/../../secret.txt", 0o600) },
			"utimens":    func() experimentalsys.Errno { return m.Utimens("../secret.txt", 1, 1) },
			"readlink": func() experimentalsys.Errno {
				_, errno := m.Readlink("sub/../../outlink")
				return errno
			},
		} {
			require.Equal(t, eperm, op(), name)
		}
		requireUntouched(t, l, before)
	})
}

// Where no symlink stands before a "..", cleaning it lexically is what the
// kernel does following it: the mount gives DirFS's results and errnos
// for the same paths (DirFS hands them to the kernel, joined to its
// directory). parityTree's link_d is "d", a sibling, so even "link_d/.."
// agrees.
func TestMountFSDotDotParity(t *testing.T) {
	t.Parallel()
	var steps []parityStep
	for _, p := range []string{"d/..", "d/../", "d/../d/f.txt", "d/../e", "d/./../d", "e/../d/../ro.txt",
		"link_d/..", "link_d/../d/f.txt", "link_f/..", "d/f.txt/..", "d/f.txt/../g.txt", "missing/..",
		"missing/../d", "dangling/..", "loop1/..", "self/..", "d/../missing", "d/../d/f.txt/"} {
		steps = append(steps, statBoth(p), openStep(p, rdonly), openStep(p, rdonly|isdir), readlinkStep(p))
	}
	steps = append(steps,
		openStep("d/../made.txt", wronly|creat|excl), statBoth("made.txt"),
		mkdirStep("d/../m"), mkdirStep("d/.."), mkdirStep("d/f.txt/.."), mkdirStep("missing/.."), mkdirStep("e/../e"),
		rmdirStep("d/.."), rmdirStep("e/.."), rmdirStep("e/../m"), rmdirStep("missing/.."), rmdirStep("d/f.txt/.."),
		unlinkStep("d/.."), unlinkStep("e/../made.txt"), unlinkStep("d/f.txt/.."),
		renameStep("d/../ro.txt", "e/../ro2.txt"), renameStep("d/..", "x"), renameStep("ro2.txt", "d/.."),
		renameStep("e/..", "e/../x"), statBoth("ro2.txt"),
		linkStep("d/../ro2.txt", "e/../h"), linkStep("ro2.txt", "d/.."), linkStep("d/..", "h2"), statBoth("h"),
		symlinkStep("t", "d/../s"), symlinkStep("t", "d/.."), readlinkStep("e/../s"),
		chmodStep("d/../h", 0o600), chmodStep("missing/../h", 0o600), statBoth("h"),
		utimensStep("d/../h", 1_000_000_005, experimentalsys.UTIME_OMIT), utimensStep("d/f.txt/../h", 1, 1),
	)
	run := func(fsys experimentalsys.FS) string {
		out := make([]string, len(steps))
		for i, s := range steps {
			out[i] = s.name + ": " + s.do(fsys)
		}
		return strings.Join(out, "\n")
	}
	want := run(sysfs.DirFS(parityTree(t)))
	eachVariant(t, func(t *testing.T, useAt bool) {
		require.Equal(t, want, run(openTestMount(t, parityTree(t), useAt)))
	})
}
