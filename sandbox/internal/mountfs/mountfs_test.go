//go:build unix

package mountfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"

	"github.com/stint-run/stint/internal/testutil"
)

// The escape tests' layout (internal/testutil.EscapeLayout).
type escapeLayout = testutil.EscapeLayout

var newEscapeLayout = testutil.NewEscapeLayout

const secretText = testutil.SecretText

// defaultBudget is the disk budget of sandbox.DefaultLimits
// (sandbox.DefaultLimits: MaxDiskBytes, MaxDiskFiles).
func defaultBudget() *Budget { return NewBudget(1<<30, 10_000) }

// mountVariants opens dir with each way the mount resolves paths.
var mountVariants = []struct {
	name  string
	useAt bool
}{{"openat2", true}, {"os.Root", false}}

// eachVariant runs f, in parallel, in a subtest for each of
// mountVariants, with its useAt.
func eachVariant(t *testing.T, f func(t *testing.T, useAt bool)) {
	for _, v := range mountVariants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			f(t, v.useAt)
		})
	}
}

// requireUntouched checks that nothing outside l's mount changed since
// its state was before, and that no file in the mount holds the secret.
func requireUntouched(t *testing.T, l escapeLayout, before string) {
	t.Helper()
	require.Equal(t, before, l.OutsideState(t))
	require.False(t, l.MountHasSecret(t))
}

func openTestMount(t *testing.T, dir string, useAt bool) *FS {
	t.Helper()
	m, err := openMountFS(dir, useAt, defaultBudget()) // the default disk budget: parity holds under it
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	if _, ok := m.ops.(rootOps); ok && useAt {
		t.Skip("no openat2 here")
	}
	return m
}

// readFile opens p in fsys with flag and reads what it can.
func readFile(fsys experimentalsys.FS, p string, flag experimentalsys.Oflag) (experimentalsys.Errno, string) {
	f, errno := fsys.OpenFile(p, flag, 0o644)
	if errno != 0 {
		return errno, ""
	}
	defer f.Close()
	buf := make([]byte, 64)
	n, _ := f.Read(buf)
	return 0, string(buf[:n])
}

type escapeCase struct {
	name string
	// guestLinks are made with the mount's Symlink before op, as a guest
	// would; hostLinks with os.Symlink in the mount, "{top}" standing for
	// the temp dir.
	guestLinks, hostLinks map[string]string
	readOnly              bool
	op                    func(fsys experimentalsys.FS, l escapeLayout) (experimentalsys.Errno, string)
	want                  experimentalsys.Errno // what the mount says
	// dirFSSafe: wazero's DirFS does not escape either (it refuses the
	// same way, or it follows a chain that comes back into the mount,
	// which the mount refuses as soon as it leaves).
	dirFSSafe bool
}

var (
	up      = map[string]string{"esc": ".."}
	finalUp = map[string]string{"f": "../secret.txt"}
)

func openOp(p string, flag experimentalsys.Oflag) func(experimentalsys.FS, escapeLayout) (experimentalsys.Errno, string) {
	return func(fsys experimentalsys.FS, _ escapeLayout) (experimentalsys.Errno, string) {
		return readFile(fsys, p, flag)
	}
}

func errOp(fn func(fsys experimentalsys.FS) experimentalsys.Errno) func(experimentalsys.FS, escapeLayout) (experimentalsys.Errno, string) {
	return func(fsys experimentalsys.FS, _ escapeLayout) (experimentalsys.Errno, string) {
		return fn(fsys), ""
	}
}

func statOp(stat func(experimentalsys.FS, string) (sys.Stat_t, experimentalsys.Errno), p string) func(experimentalsys.FS, escapeLayout) (experimentalsys.Errno, string) {
	return func(fsys experimentalsys.FS, _ escapeLayout) (experimentalsys.Errno, string) {
		st, errno := stat(fsys, p)
		return errno, fmt.Sprint(st.Size)
	}
}

var (
	statFn  = experimentalsys.FS.Stat
	lstatFn = experimentalsys.FS.Lstat
)

const (
	rdonly = experimentalsys.O_RDONLY
	wronly = experimentalsys.O_WRONLY
	rdwr   = experimentalsys.O_RDWR
	creat  = experimentalsys.O_CREAT
	excl   = experimentalsys.O_EXCL
	trunc  = experimentalsys.O_TRUNC
	nofoll = experimentalsys.O_NOFOLLOW
	isdir  = experimentalsys.O_DIRECTORY
	eperm  = experimentalsys.EPERM
)

var escapeCases = []escapeCase{
	// a guest's relative symlink to the mount's parent
	{name: "open esc/secret", guestLinks: up, op: openOp("esc/secret.txt", rdonly), want: eperm},
	{name: "open esc/secret for writing", guestLinks: up, op: func(fsys experimentalsys.FS, _ escapeLayout) (experimentalsys.Errno, string) {
		f, errno := fsys.OpenFile("esc/secret.txt", wronly, 0)
		if errno == 0 {
			_, errno = f.Write([]byte("pwned"))
			f.Close()
		}
		return errno, ""
	}, want: eperm},
	{name: "truncate esc/secret", guestLinks: up, op: openOp("esc/secret.txt", rdwr|trunc), want: eperm},
	{name: "create esc/new", guestLinks: up, op: openOp("esc/new.txt", wronly|creat), want: eperm},
	{name: "create esc/new exclusive", guestLinks: up, op: openOp("esc/new.txt", wronly|creat|excl), want: eperm},
	{name: "open esc as a directory", guestLinks: up, op: func(fsys experimentalsys.FS, _ escapeLayout) (experimentalsys.Errno, string) {
		f, errno := fsys.OpenFile("esc", rdonly|isdir, 0)
		if errno != 0 {
			return errno, ""
		}
		defer f.Close()
		ents, errno := f.Readdir(-1)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name)
		}
		sort.Strings(names)
		return errno, strings.Join(names, ",")
	}, want: eperm},
	{name: "open esc/ nofollow", guestLinks: up, op: openOp("esc/", rdonly|isdir|nofoll), want: eperm},
	{name: "stat esc/secret", guestLinks: up, op: statOp(statFn, "esc/secret.txt"), want: eperm},
	{name: "stat esc", guestLinks: up, op: statOp(statFn, "esc"), want: eperm},
	{name: "lstat esc/secret", guestLinks: up, op: statOp(lstatFn, "esc/secret.txt"), want: eperm},
	{name: "lstat esc/", guestLinks: up, op: statOp(lstatFn, "esc/"), want: eperm},
	{name: "mkdir esc/newdir", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Mkdir("esc/newdir", 0o755)
	}), want: eperm},
	{name: "unlink esc/secret", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Unlink("esc/secret.txt")
	}), want: eperm},
	{name: "rmdir esc/outdir", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Rmdir("esc/outdir")
	}), want: eperm},
	{name: "chmod esc/secret", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Chmod("esc/secret.txt", 0o600)
	}), want: eperm},
	{name: "utimens esc/secret", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Utimens("esc/secret.txt", 1e9, 2e9)
	}), want: eperm},
	{name: "readlink esc/outlink", guestLinks: up, op: func(fsys experimentalsys.FS, _ escapeLayout) (experimentalsys.Errno, string) {
		return swap(fsys.Readlink("esc/outlink"))
	}, want: eperm},
	{name: "rename esc/secret in", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Rename("esc/secret.txt", "stolen")
	}), want: eperm},
	{name: "rename in.txt out", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Rename("in.txt", "esc/planted")
	}), want: eperm},
	{name: "rename onto esc/secret", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Rename("in.txt", "esc/secret.txt")
	}), want: eperm},
	{name: "hard link esc/secret in", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Link("esc/secret.txt", "hard")
	}), want: eperm},
	{name: "hard link in.txt out", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Link("in.txt", "esc/planted")
	}), want: eperm},
	{name: "symlink esc/planted", guestLinks: up, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Symlink("x", "esc/planted")
	}), want: eperm},
	{name: "deep symlink to the host root", guestLinks: map[string]string{"deep": strings.Repeat("../", 40)},
		op: func(fsys experimentalsys.FS, l escapeLayout) (experimentalsys.Errno, string) {
			return readFile(fsys, "deep"+l.Secret, rdonly)
		}, want: eperm},
	{name: "symlink in a subdirectory", guestLinks: map[string]string{"sub/up": "../.."}, op: openOp("sub/up/secret.txt", rdonly), want: eperm},

	// a last component that is a symlink out
	{name: "open f", guestLinks: finalUp, op: openOp("f", rdonly), want: eperm},
	{name: "open f nofollow", guestLinks: finalUp, op: openOp("f", rdonly|nofoll), want: experimentalsys.ELOOP, dirFSSafe: true},
	{name: "truncate f", guestLinks: finalUp, op: openOp("f", wronly|trunc), want: eperm},
	{name: "create through f", guestLinks: finalUp, op: openOp("f", wronly|creat), want: eperm},
	{name: "stat f", guestLinks: finalUp, op: statOp(statFn, "f"), want: eperm},
	{name: "chmod f", guestLinks: finalUp, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Chmod("f", 0o600)
	}), want: eperm},
	{name: "utimens f", guestLinks: finalUp, op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Utimens("f", experimentalsys.UTIME_OMIT, 2e9)
	}), want: eperm},
	{name: "create through a dangling symlink", guestLinks: map[string]string{"dang": "../created.txt"},
		op: openOp("dang", wronly|creat), want: eperm},
	{name: "mkdir through a dangling symlink/", guestLinks: map[string]string{"dang": "../newdir"},
		op:   errOp(func(fsys experimentalsys.FS) experimentalsys.Errno { return fsys.Mkdir("dang/", 0o755) }),
		want: experimentalsys.EEXIST, dirFSSafe: true},

	// chains
	{name: "chain out", guestLinks: map[string]string{"c1": "sub/c2", "sub/c2": "../c3", "c3": "../secret.txt"},
		op: openOp("c1", rdonly), want: eperm},
	{name: "chain out and back in", guestLinks: map[string]string{"oib": "../mnt/sub/../in.txt"},
		op: openOp("oib", rdonly), want: eperm, dirFSSafe: true},

	// ".." in the path itself (wazero refuses these before the FS sees them)
	{name: "stat ..", op: statOp(statFn, ".."), want: eperm},
	{name: "open ../secret", op: openOp("../secret.txt", rdonly), want: eperm},
	{name: "lstat sub/../../secret", op: statOp(lstatFn, "sub/../../secret.txt"), want: eperm},
	{name: "mkdir ../newdir", op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Mkdir("../newdir", 0o755)
	}), want: eperm},
	{name: "symlink ../planted", op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Symlink("x", "../planted")
	}), want: eperm},
	{name: "hard link ../secret in", op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Link("../secret.txt", "hard")
	}), want: eperm},
	{name: "rename ../secret in", op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Rename("../secret.txt", "stolen")
	}), want: eperm},

	// symlinks the host made
	{name: "host absolute symlink to a directory", hostLinks: map[string]string{"abs": "{top}"},
		op: openOp("abs/secret.txt", rdonly), want: eperm},
	{name: "host absolute symlink to a file", hostLinks: map[string]string{"absf": "{top}/secret.txt"},
		op: openOp("absf", rdonly), want: eperm},
	{name: "stat through a host absolute symlink", hostLinks: map[string]string{"abs": "{top}"},
		op: statOp(statFn, "abs/secret.txt"), want: eperm},
	{name: "host symlink in a read-only mount", hostLinks: map[string]string{"hostlink": "../secret.txt"}, readOnly: true,
		op: openOp("hostlink", rdonly), want: eperm},
	{name: "host directory symlink in a read-only mount", hostLinks: map[string]string{"hostdir": ".."}, readOnly: true,
		op: openOp("hostdir/secret.txt", rdonly), want: eperm},
	{name: "stat a host symlink in a read-only mount", hostLinks: map[string]string{"hostlink": "../secret.txt"}, readOnly: true,
		op: statOp(statFn, "hostlink"), want: eperm},

	// a guest's absolute symlink (DirFS refuses it too)
	{name: "guest absolute symlink", op: errOp(func(fsys experimentalsys.FS) experimentalsys.Errno {
		return fsys.Symlink("/etc", "abs")
	}), want: eperm, dirFSSafe: true},
}

func swap(s string, errno experimentalsys.Errno) (experimentalsys.Errno, string) { return errno, s }

// runEscapeCase prepares the layout and runs c on the mount open returns;
// it reports what the op returned and whether it escaped: it succeeded, or
// changed something outside, or brought the secret into the mount.
func runEscapeCase(t *testing.T, c escapeCase, open func(dir string) experimentalsys.FS) (experimentalsys.Errno, bool) {
	t.Helper()
	l := newEscapeLayout(t)
	for name, target := range c.hostLinks {
		require.NoError(t, os.Symlink(strings.ReplaceAll(target, "{top}", l.Top), filepath.Join(l.Mnt, name)))
	}
	fsys := open(l.Mnt)
	for name, target := range c.guestLinks {
		require.Equal(t, experimentalsys.Errno(0), fsys.Symlink(target, name), "symlink %s", name)
	}
	if c.readOnly {
		fsys = ReadOnly(fsys)
	}
	before := l.OutsideState(t)
	errno, got := c.op(fsys, l)
	changed := l.OutsideState(t) != before
	return errno, errno == 0 || changed || got == secretText || l.MountHasSecret(t)
}

func TestMountFSEscapes(t *testing.T) {
	t.Parallel()
	eachVariant(t, func(t *testing.T, useAt bool) {
		for _, c := range escapeCases {
			t.Run(c.name, func(t *testing.T) {
				errno, escaped := runEscapeCase(t, c, func(dir string) experimentalsys.FS {
					return openTestMount(t, dir, useAt)
				})
				require.Equal(t, c.want, errno)
				require.False(t, escaped)
			})
		}
	})
	// The same cases against wazero's DirFS, which these tests exist to
	// replace: each one escapes there.
	t.Run("wazero DirFS", func(t *testing.T) {
		t.Parallel()
		for _, c := range escapeCases {
			if c.dirFSSafe {
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				_, escaped := runEscapeCase(t, c, sysfs.DirFS)
				require.True(t, escaped)
			})
		}
	})
}

// Operations on a symlink itself (not through it) work, and leave the
// outside alone: renaming onto it replaces the link, a hard link to it is
// a second link, and following either is still refused.
func TestMountFSSymlinkItself(t *testing.T) {
	t.Parallel()
	eachVariant(t, func(t *testing.T, useAt bool) {
		l := newEscapeLayout(t)
		m := openTestMount(t, l.Mnt, useAt)
		before := l.OutsideState(t)
		require.Zero(t, m.Symlink("../secret.txt", "f"))
		require.Zero(t, m.Symlink("../secret.txt", "g"))
		require.Zero(t, m.Link("f", "hard"))
		st, errno := m.Lstat("hard")
		require.Zero(t, errno)
		require.Equal(t, fs.ModeSymlink, st.Mode.Type())
		require.EqualValues(t, 2, st.Nlink)
		errno, _ = readFile(m, "hard", rdonly)
		require.Equal(t, eperm, errno)
		target, errno := m.Readlink("hard")
		require.Zero(t, errno)
		require.Equal(t, "../secret.txt", target)

		require.Zero(t, m.Rename("in.txt", "f"))
		errno, got := readFile(m, "f", rdonly)
		require.Zero(t, errno)
		require.Equal(t, "inside", got)
		require.Zero(t, m.Unlink("g"))
		require.Zero(t, m.Unlink("hard"))
		requireUntouched(t, l, before)
	})
}

// Symlinks that stay inside the mount resolve as they do with DirFS.
func TestMountFSSymlinksInside(t *testing.T) {
	t.Parallel()
	eachVariant(t, func(t *testing.T, useAt bool) {
		l := newEscapeLayout(t)
		require.NoError(t, os.Symlink("../in.txt", filepath.Join(l.Mnt, "sub", "hostback")))
		m := openTestMount(t, l.Mnt, useAt)
		require.Zero(t, m.Symlink("sub", "d"))
		require.Zero(t, m.Symlink("../in.txt", "sub/back"))
		require.Zero(t, m.Symlink("d/back", "chain"))
		require.Zero(t, m.Symlink("sub/../sub/./back", "dots"))
		for _, p := range []string{"d/back", "sub/back", "chain", "dots", "d/hostback", "sub/hostback"} {
			errno, got := readFile(m, p, rdonly)
			require.Zero(t, errno, p)
			require.Equal(t, "inside", got, p)
			st, errno := m.Stat(p)
			require.Zero(t, errno, p)
			require.EqualValues(t, len("inside"), st.Size, p)
		}
		// a write through a symlink lands inside
		f, errno := m.OpenFile("d/new.txt", wronly|creat|excl, 0o644)
		require.Zero(t, errno)
		_, errno = f.Write([]byte("new"))
		require.Zero(t, errno)
		require.Zero(t, f.Close())
		b, err := os.ReadFile(filepath.Join(l.Mnt, "sub", "new.txt"))
		require.NoError(t, err)
		require.Equal(t, "new", string(b))
		require.Zero(t, m.Mkdir("d/dir", 0o755))
		require.Zero(t, m.Rename("d/new.txt", "d/dir/new.txt"))
		require.Zero(t, m.Utimens("d/dir/new.txt", 1_000_000_007, experimentalsys.UTIME_OMIT))
		// A ".." that stays inside is cleaned lexically ("d/.." is the
		// root, not sub's parent), once what it climbs out of is
		// found to be a directory: "chain" resolves to a file.
		_, errno = m.Stat("chain/../dir/new.txt")
		require.Equal(t, experimentalsys.ENOTDIR, errno)
		_, errno = m.Stat("d/../sub/dir/new.txt")
		require.Zero(t, errno)
		_, errno = m.Stat("d/../dir/new.txt")
		require.Equal(t, experimentalsys.ENOENT, errno)
		st, errno := m.Stat("d/dir/new.txt")
		require.Zero(t, errno)
		require.EqualValues(t, 1_000_000_007, st.Atim)
		errno, _ = readFile(m, "chain", rdonly|nofoll)
		require.Equal(t, experimentalsys.ELOOP, errno)
	})
}

// A guest cannot remove the mount's directory (DirFS removes it if empty).
func TestMountFSRmdirRoot(t *testing.T) {
	t.Parallel()
	eachVariant(t, func(t *testing.T, useAt bool) {
		dir := t.TempDir()
		m := openTestMount(t, dir, useAt)
		for _, p := range []string{".", "", "/", "./"} {
			require.Equal(t, experimentalsys.EINVAL, m.Rmdir(p), p)
		}
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		require.True(t, fi.IsDir())
	})
}

// A read-only mount refuses every write, including the O_CREAT and
// O_TRUNC opens with only the read right that wazero's ReadFS lets
// through.
func TestMountFSReadOnly(t *testing.T) {
	t.Parallel()
	writes := map[string]func(experimentalsys.FS) experimentalsys.Errno{
		"create": func(m experimentalsys.FS) experimentalsys.Errno {
			e, _ := readFile(m, "new.txt", rdonly|creat)
			return e
		},
		"truncate": func(m experimentalsys.FS) experimentalsys.Errno {
			e, _ := readFile(m, "in.txt", rdonly|trunc)
			return e
		},
		"open rdwr": func(m experimentalsys.FS) experimentalsys.Errno { e, _ := readFile(m, "in.txt", rdwr); return e },
		"open wronly": func(m experimentalsys.FS) experimentalsys.Errno {
			e, _ := readFile(m, "in.txt", wronly|experimentalsys.O_APPEND)
			return e
		},
		"mkdir":        func(m experimentalsys.FS) experimentalsys.Errno { return m.Mkdir("d", 0o755) },
		"chmod":        func(m experimentalsys.FS) experimentalsys.Errno { return m.Chmod("in.txt", 0o600) },
		"rename":       func(m experimentalsys.FS) experimentalsys.Errno { return m.Rename("in.txt", "x") },
		"rmdir":        func(m experimentalsys.FS) experimentalsys.Errno { return m.Rmdir("sub") },
		"unlink":       func(m experimentalsys.FS) experimentalsys.Errno { return m.Unlink("in.txt") },
		"link":         func(m experimentalsys.FS) experimentalsys.Errno { return m.Link("in.txt", "x") },
		"symlink":      func(m experimentalsys.FS) experimentalsys.Errno { return m.Symlink("in.txt", "x") },
		"utimens":      func(m experimentalsys.FS) experimentalsys.Errno { return m.Utimens("in.txt", 1, 1) },
		"write a file": writeOpened(func(f experimentalsys.File) experimentalsys.Errno { _, e := f.Write([]byte("x")); return e }),
		"pwrite":       writeOpened(func(f experimentalsys.File) experimentalsys.Errno { _, e := f.Pwrite([]byte("x"), 0); return e }),
		"ftruncate":    writeOpened(func(f experimentalsys.File) experimentalsys.Errno { return f.Truncate(0) }),
		"futimens":     writeOpened(func(f experimentalsys.File) experimentalsys.Errno { return f.Utimens(1, 1) }),
	}
	eachVariant(t, func(t *testing.T, useAt bool) {
		l := newEscapeLayout(t)
		ro := ReadOnly(openTestMount(t, l.Mnt, useAt))
		before := dirState(t, l.Top)
		for name, w := range writes {
			// as wazero's ReadFS: EROFS, except an open for writing
			// (ENOSYS) and a write to a file opened for reading (EBADF)
			want := experimentalsys.EROFS
			switch name {
			case "open rdwr", "open wronly":
				want = experimentalsys.ENOSYS
			case "write a file", "pwrite", "ftruncate", "futimens":
				want = experimentalsys.EBADF
			}
			require.Equal(t, want, w(ro), name)
		}
		require.Equal(t, before, dirState(t, l.Top))
		errno, got := readFile(ro, "in.txt", rdonly)
		require.Zero(t, errno)
		require.Equal(t, "inside", got)
	})
	t.Run("wazero ReadFS", func(t *testing.T) {
		t.Parallel()
		l := newEscapeLayout(t)
		ro := &sysfs.ReadFS{FS: sysfs.DirFS(l.Mnt)}
		errno, _ := readFile(ro, "in.txt", rdonly|trunc)
		require.Zero(t, errno, "ReadFS truncates in a read-only mount")
		errno, _ = readFile(ro, "new.txt", rdonly|creat)
		require.Zero(t, errno, "ReadFS creates in a read-only mount")
	})
}

func writeOpened(fn func(experimentalsys.File) experimentalsys.Errno) func(experimentalsys.FS) experimentalsys.Errno {
	return func(m experimentalsys.FS) experimentalsys.Errno {
		f, errno := m.OpenFile("in.txt", rdonly, 0)
		if errno != 0 {
			return 0 // must open for reading
		}
		defer f.Close()
		return fn(f)
	}
}

// dirState describes every file under dir (mount included), as
// outsideState does.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	return escapeLayout{Top: dir, Mnt: "\x00none"}.OutsideState(t)
}

// parityTree makes the tree TestMountFSParity starts from.
func parityTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"d", "e"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d", "f.txt"), []byte("hello"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d", "g.txt"), nil, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ro.txt"), []byte("ro"), 0o444))
	for name, target := range map[string]string{
		"link_f": "d/f.txt", "link_d": "d", "dangling": "nope", "loop1": "loop2", "loop2": "loop1", "self": "self",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(dir, name)))
	}
	return dir
}

func errnoString(errno experimentalsys.Errno) string {
	if errno == 0 {
		return "ok"
	}
	return errno.Error()
}

// statString is what two identical trees share of a Stat_t: not inodes,
// devices or times, nor the size of a directory.
func statString(st sys.Stat_t, errno experimentalsys.Errno) string {
	if errno != 0 {
		return errnoString(errno)
	}
	if st.Mode.IsDir() {
		return fmt.Sprintf("%v nlink=%d", st.Mode, st.Nlink)
	}
	return fmt.Sprintf("%v nlink=%d size=%d", st.Mode, st.Nlink, st.Size)
}

func direntsString(ents []experimentalsys.Dirent, errno experimentalsys.Errno) string {
	if errno != 0 {
		return errnoString(errno)
	}
	var names []string
	for _, e := range ents {
		names = append(names, fmt.Sprintf("%s:%v", e.Name, e.Type))
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// describeOpen opens p and says what it found: the file's mode, and its
// content or its entries.
func describeOpen(fsys experimentalsys.FS, p string, flag experimentalsys.Oflag) string {
	f, errno := fsys.OpenFile(p, flag, 0o640)
	if errno != 0 {
		return errnoString(errno)
	}
	defer f.Close()
	st, errno := f.Stat()
	out := statString(st, errno)
	if isDir, _ := f.IsDir(); isDir {
		return out + " [" + direntsString(f.Readdir(-1)) + "]"
	}
	if flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR) == experimentalsys.O_WRONLY {
		return out
	}
	buf := make([]byte, 64)
	n, errno := f.Read(buf)
	return fmt.Sprintf("%s %q %s", out, buf[:n], errnoString(errno))
}

type parityStep struct {
	name string
	do   func(fsys experimentalsys.FS) string
}

func statBoth(p string) parityStep {
	return parityStep{"stat " + p, func(fsys experimentalsys.FS) string {
		return statString(fsys.Stat(p)) + " | lstat " + statString(fsys.Lstat(p))
	}}
}

func openStep(p string, flag experimentalsys.Oflag) parityStep {
	return parityStep{fmt.Sprintf("open %q %v", p, flag), func(fsys experimentalsys.FS) string {
		return describeOpen(fsys, p, flag)
	}}
}

func errStep(name string, fn func(fsys experimentalsys.FS) experimentalsys.Errno) parityStep {
	return parityStep{name, func(fsys experimentalsys.FS) string { return errnoString(fn(fsys)) }}
}

func mkdirStep(p string) parityStep {
	return errStep("mkdir "+p, func(fsys experimentalsys.FS) experimentalsys.Errno { return fsys.Mkdir(p, 0o750) })
}

func readlinkStep(p string) parityStep {
	return parityStep{"readlink " + p, func(fsys experimentalsys.FS) string {
		dst, errno := fsys.Readlink(p)
		return dst + " " + errnoString(errno)
	}}
}

func symlinkStep(target, p string) parityStep {
	return errStep("symlink "+target+" "+p, func(fsys experimentalsys.FS) experimentalsys.Errno { return fsys.Symlink(target, p) })
}

func linkStep(from, to string) parityStep {
	return errStep("link "+from+" "+to, func(fsys experimentalsys.FS) experimentalsys.Errno { return fsys.Link(from, to) })
}

func renameStep(from, to string) parityStep {
	return errStep("rename "+from+" "+to, func(fsys experimentalsys.FS) experimentalsys.Errno { return fsys.Rename(from, to) })
}

func chmodStep(p string, perm fs.FileMode) parityStep {
	return errStep(fmt.Sprintf("chmod %s %v", p, perm), func(fsys experimentalsys.FS) experimentalsys.Errno { return fsys.Chmod(p, perm) })
}

func utimensStep(p string, atim, mtim int64) parityStep {
	return parityStep{fmt.Sprintf("utimens %s %d %d", p, atim, mtim), func(fsys experimentalsys.FS) string {
		errno := fsys.Utimens(p, atim, mtim)
		st, serrno := fsys.Stat(p)
		out := errnoString(errno)
		if serrno == 0 {
			out += fmt.Sprintf(" atim=%v mtim=%v", st.Atim == atim, st.Mtim == mtim)
		}
		return out
	}}
}

func unlinkStep(p string) parityStep {
	return errStep("unlink "+p, func(fsys experimentalsys.FS) experimentalsys.Errno { return fsys.Unlink(p) })
}

func rmdirStep(p string) parityStep {
	return errStep("rmdir "+p, func(fsys experimentalsys.FS) experimentalsys.Errno { return fsys.Rmdir(p) })
}

// paritySteps run in order on a parityTree; each says what it saw.
var paritySteps = func() []parityStep {
	const omit = experimentalsys.UTIME_OMIT
	steps := []parityStep{
		{"create and write", func(fsys experimentalsys.FS) string {
			f, errno := fsys.OpenFile("new.txt", rdwr|creat|excl, 0o640)
			if errno != 0 {
				return errnoString(errno)
			}
			defer f.Close()
			n, errno := f.Write([]byte("abc"))
			off, serrno := f.Seek(0, 0)
			buf := make([]byte, 8)
			r, rerrno := f.Read(buf)
			return fmt.Sprint(n, errno, off, serrno, string(buf[:r]), rerrno, statString(f.Stat()))
		}},
		openStep("new.txt", rdwr|creat|excl),
		openStep("new.txt", rdonly),
		openStep("missing", rdonly),
		openStep("missing/x", rdonly),
		openStep("d/f.txt/", rdonly),
		openStep("d/f.txt/x", rdonly),
		openStep("d", rdonly|isdir),
		openStep("d/", rdonly),
		openStep("d/f.txt", rdonly|isdir),
		openStep("d", wronly),
		openStep("d", rdwr|isdir),
		openStep("link_f", rdonly|nofoll),
		openStep("link_f", rdonly),
		openStep("link_f", wronly|nofoll),
		openStep("link_d", rdonly|isdir),
		openStep("link_d", rdonly|isdir|nofoll),
		openStep("link_d/", rdonly|nofoll),
		openStep("link_f/", rdonly),
		openStep("dangling", rdonly),
		openStep("dangling", rdonly|nofoll),
		openStep("dangling", wronly|creat|excl),
		openStep("loop1", rdonly),
		openStep("loop1", rdonly|nofoll),
		openStep("loop1/x", rdonly),
		openStep("self", rdonly),
		openStep(".", rdonly),
		openStep("", rdonly|isdir),
		openStep("/d/f.txt", rdonly),
		openStep("d/./f.txt", rdonly),
		openStep("d//f.txt", rdonly),
		openStep("ro.txt", rdonly),
		openStep("new.txt", wronly|trunc),
		statBoth("new.txt"),
		{"append", func(fsys experimentalsys.FS) string {
			f, errno := fsys.OpenFile("new.txt", wronly|experimentalsys.O_APPEND, 0)
			if errno != 0 {
				return errnoString(errno)
			}
			_, e1 := f.Write([]byte("xy"))
			_, e2 := f.Write([]byte("z"))
			a := f.IsAppend()
			f.Close()
			return fmt.Sprint(e1, e2, a, describeOpen(fsys, "new.txt", rdonly))
		}},
		openStep("dangling", wronly|creat),
		statBoth("nope"),
		openStep("nope", rdonly|creat|excl|nofoll),
		openStep("d/new", rdwr|creat|trunc),
		openStep("ro.txt", wronly|creat|excl),
	}
	for _, p := range []string{".", "", "d", "d/", "d/f.txt", "d/f.txt/", "link_f", "link_f/", "link_d",
		"link_d/", "dangling", "missing", "missing/x", "d/f.txt/x", "loop1", "loop1/", "self", "e", "/d", "d/./f.txt"} {
		steps = append(steps, statBoth(p))
	}
	steps = append(steps,
		mkdirStep("m"), mkdirStep("m"), mkdirStep("missing/x"), mkdirStep("d/f.txt/x"), mkdirStep("m2/"),
		mkdirStep("link_d"), mkdirStep("link_d/"), mkdirStep("dangling"), mkdirStep("dangling/"), mkdirStep("."),
		mkdirStep("e/sub"), mkdirStep("loop1/x"), statBoth("m"), statBoth("e/sub"),

		readlinkStep("link_f"), readlinkStep("link_d"), readlinkStep("d/f.txt"), readlinkStep("missing"),
		readlinkStep("link_d/"), readlinkStep("link_f/"), readlinkStep("d/f.txt/"), readlinkStep("."),
		readlinkStep("dangling"), readlinkStep("dangling/"), readlinkStep("d"), readlinkStep("loop1"), readlinkStep("loop1/"),

		symlinkStep("t", "s1"), symlinkStep("t", "s1"), symlinkStep("/abs", "s2"), symlinkStep("x", "missing/s"),
		symlinkStep("x", "s3/"), symlinkStep("x", "d/f.txt/s"), symlinkStep("x", "d"), symlinkStep("x", "link_d/"),
		symlinkStep("../../..", "up"), symlinkStep("d/f.txt", "d/in"), statBoth("s1"), readlinkStep("s1"),

		linkStep("d/f.txt", "hard"), statBoth("hard"), statBoth("d/f.txt"), linkStep("d/f.txt", "hard"),
		linkStep("missing", "h2"), linkStep("d", "hd"), linkStep("link_f", "hl"), statBoth("hl"),
		linkStep("link_d/", "hd2"), linkStep("d/f.txt/", "x"), linkStep("d/f.txt", "missing/h"),
		linkStep("d/f.txt", "h3/"), linkStep("dangling", "hdang"), statBoth("hdang"), linkStep("e/", "he"),
		linkStep("d/f.txt", "d"), linkStep("loop1/", "hloop"),

		renameStep("new.txt", "renamed.txt"), renameStep("missing", "x"), renameStep("renamed.txt", "d"),
		renameStep("d", "renamed.txt"), renameStep("m", "e"), renameStep("m", "m2"), statBoth("m2"),
		renameStep("d/f.txt", "d/f.txt"), renameStep("renamed.txt/", "x"), renameStep("link_d", "link_d2"),
		statBoth("link_d2"), renameStep("renamed.txt", "renamed2.txt/"), renameStep("m2", "m3/"),
		renameStep("e", "e/sub/x"), renameStep("hard", "link_f"), statBoth("link_f"), renameStep("d/g.txt", "missing/g"),
		renameStep("link_d2/", "ld3"), renameStep("s1", "s1/"), renameStep(".", "x"), renameStep("m3", "."),
		renameStep("d/.", "x"), renameStep("m3", "d/."), linkStep(".", "x"), linkStep("d/f.txt", "."),
		symlinkStep("x", "."), symlinkStep("x", "d/."), mkdirStep("d/."), unlinkStep("d/."), rmdirStep("d/."),
		readlinkStep("d/."), statBoth("d/."),

		chmodStep("renamed.txt", 0o444), statBoth("renamed.txt"), chmodStep("missing", 0o644),
		chmodStep("hl", 0o604), statBoth("d/f.txt"), chmodStep("d/f.txt/", 0o644), chmodStep("dangling", 0o644),
		chmodStep("d", 0o700), statBoth("d"), chmodStep("d/", 0o755), chmodStep(".", 0o755), chmodStep("loop1", 0o644),
		chmodStep("renamed.txt", 0o644),

		utimensStep("renamed.txt", 1_000_000_005, omit), utimensStep("renamed.txt", omit, 2_000_000_007),
		utimensStep("renamed.txt", 3_000_000_000, 4_000_000_000), utimensStep("missing", 1, 1),
		utimensStep("missing", omit, omit), utimensStep("hl", 5_000_000_001, 6_000_000_001),
		utimensStep("dangling", 1, 1), utimensStep("d/", 7e9, 7e9), utimensStep("d/f.txt/", 7e9, 7e9),
		utimensStep("loop1", 1, 1),

		unlinkStep("renamed.txt"), unlinkStep("renamed.txt"), unlinkStep("d"), unlinkStep("d/f.txt/"),
		unlinkStep("link_d2/"), unlinkStep("link_d2"), unlinkStep("s1"), unlinkStep("."), unlinkStep("e/"),
		unlinkStep("missing/x"), unlinkStep("loop1/"), unlinkStep("hdang"),

		rmdirStep("m3"), rmdirStep("e"), rmdirStep("e/sub/"), rmdirStep("e"), rmdirStep("hl"),
		rmdirStep("missing"), rmdirStep("d"), rmdirStep("up"), rmdirStep("up/"), rmdirStep("d/f.txt/"),
		rmdirStep("loop1/"),

		openStep(".", rdonly|isdir),
		parityStep{"readdir rewind", func(fsys experimentalsys.FS) string {
			f, errno := fsys.OpenFile("d", rdonly|isdir, 0)
			if errno != 0 {
				return errnoString(errno)
			}
			defer f.Close()
			first := direntsString(f.Readdir(-1))
			_, cerrno := fsys.OpenFile("d/h.txt", wronly|creat, 0o600)
			_, serrno := f.Seek(0, 0)
			return fmt.Sprint(first, " ", cerrno, serrno, " ", direntsString(f.Readdir(-1)))
		}},
		parityStep{"file ops read-only", func(fsys experimentalsys.FS) string {
			f, errno := fsys.OpenFile("d/f.txt", rdonly, 0)
			if errno != 0 {
				return errnoString(errno)
			}
			defer f.Close()
			isDir, e1 := f.IsDir()
			buf := make([]byte, 3)
			n, e2 := f.Pread(buf, 1)
			_, e3 := f.Pwrite([]byte("x"), 0)
			e4 := f.Truncate(0)
			off, e5 := f.Seek(2, 0)
			m, e6 := f.Read(buf)
			_, e7 := f.Seek(0, 3)
			_, e8 := f.Write([]byte("x"))
			e9 := f.Truncate(-1)
			return fmt.Sprint(isDir, e1, string(buf[:n]), e2, e3, e4, off, e5, string(buf[:m]), e6, e7, e8, e9, f.IsAppend())
		}},
		parityStep{"file ops read-write", func(fsys experimentalsys.FS) string {
			f, errno := fsys.OpenFile("d/f.txt", rdwr, 0)
			if errno != 0 {
				return errnoString(errno)
			}
			_, e1 := f.Pwrite([]byte("ZZ"), 1)
			e2 := f.Truncate(4)
			st, e3 := f.Stat()
			e4, e5 := f.Sync(), f.Datasync()
			e6 := f.Utimens(8_000_000_009, omit)
			st2, _ := f.Stat()
			e7 := f.SetAppend(true)
			_, e8 := f.Write([]byte("!"))
			e9 := f.SetAppend(false)
			_, e10 := f.Pwrite([]byte("Y"), 0)
			e11, e12 := f.Close(), f.Close()
			_, e13 := f.Read(make([]byte, 1))
			_, e14 := f.Stat()
			return fmt.Sprint(e1, e2, statString(st, e3), e4, e5, e6, st2.Atim == 8_000_000_009, e7, e8, e9, e10, e11, e12, e13, e14,
				" ", describeOpen(fsys, "d/f.txt", rdonly))
		}},
		parityStep{"file ops on a directory", func(fsys experimentalsys.FS) string {
			f, errno := fsys.OpenFile("d", rdonly, 0)
			if errno != 0 {
				return errnoString(errno)
			}
			defer f.Close()
			_, e1 := f.Read(make([]byte, 1))
			_, e2 := f.Write([]byte("x"))
			e3 := f.Truncate(0)
			_, e4 := f.Pread(make([]byte, 1), 0)
			e5 := f.SetAppend(true)
			_, e6 := f.Seek(0, 0)
			return fmt.Sprint(e1, e2, e3, e4, e5, e6, direntsString(f.Readdir(-1)))
		}},
		parityStep{"nonblock", func(fsys experimentalsys.FS) string {
			f, errno := fsys.OpenFile("d/f.txt", rdonly|experimentalsys.O_NONBLOCK, 0)
			if errno != 0 {
				return errnoString(errno)
			}
			defer f.Close()
			pf := f.(experimentalsys.PollableFile)
			nb := pf.IsNonblock()
			e1 := pf.SetNonblock(false)
			ready, e2 := pf.Poll(experimentalsys.POLLIN, 0)
			_, e3 := pf.Poll(experimentalsys.POLLOUT, 0)
			return fmt.Sprint(nb, e1, pf.IsNonblock(), ready, e2, e3)
		}},
	)
	return steps
}()

// TestMountFSParity runs the same operations on a mount and on wazero's
// DirFS, each on its own copy of a tree, and expects the same results and
// errnos: inside the directory, the mount behaves as DirFS does.
func TestMountFSParity(t *testing.T) {
	t.Parallel()
	run := func(fsys experimentalsys.FS) []string {
		out := make([]string, len(paritySteps))
		for i, s := range paritySteps {
			out[i] = s.name + ": " + s.do(fsys)
		}
		return out
	}
	want := run(sysfs.DirFS(parityTree(t)))
	eachVariant(t, func(t *testing.T, useAt bool) {
		got := run(openTestMount(t, parityTree(t), useAt))
		require.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"))
	})
}

// BenchmarkMountFS compares what an open+close and a stat cost through the
// mount (both resolvers) and through wazero's DirFS, for a file at the top
// of the mount and one three directories down. Run:
//
//	go test ./sandbox/internal/mountfs -run XXX -bench Mount -count 6
func BenchmarkMountFS(b *testing.B) {
	dir := b.TempDir()
	require.NoError(b, os.MkdirAll(filepath.Join(dir, "a", "b", "c"), 0o755))
	for _, p := range []string{"f.txt", "a/b/c/f.txt"} {
		require.NoError(b, os.WriteFile(filepath.Join(dir, p), []byte("hello"), 0o644))
	}
	variants := []struct {
		name string
		fsys experimentalsys.FS
	}{{"DirFS", sysfs.DirFS(dir)}}
	for _, v := range mountVariants {
		m, err := openMountFS(dir, v.useAt, defaultBudget())
		require.NoError(b, err)
		b.Cleanup(func() { _ = m.Close() })
		variants = append(variants, struct {
			name string
			fsys experimentalsys.FS
		}{v.name, m})
	}
	for _, p := range []struct{ name, path string }{{"top", "f.txt"}, {"depth4", "a/b/c/f.txt"}} {
		for _, v := range variants {
			b.Run("open+close/"+p.name+"/"+v.name, func(b *testing.B) {
				for b.Loop() {
					f, errno := v.fsys.OpenFile(p.path, rdonly, 0)
					if errno != 0 {
						b.Fatal(errno)
					}
					f.Close()
				}
			})
		}
		for _, v := range variants {
			b.Run("stat/"+p.name+"/"+v.name, func(b *testing.B) {
				for b.Loop() {
					if _, errno := v.fsys.Stat(p.path); errno != 0 {
						b.Fatal(errno)
					}
				}
			})
		}
	}
}
