//go:build unix

package mountfs

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"

	"github.com/stint-run/stint/internal/testutil"
)

// Opening a FIFO, for reading or writing, or a socket in a mount fails at
// once with ENOTSUP instead of blocking in open(2); regular files and
// directories open as before, their O_NONBLOCK as the guest asked, and
// the special files can still be listed and stat'ed.
func TestMountSpecialFilesRefused(t *testing.T) {
	t.Parallel()
	dir := testutil.SpecialDir(t)
	for _, v := range mountVariants {
		t.Run(v.name, func(t *testing.T) {
			m := openTestMount(t, dir, v.useAt)
			for _, c := range []struct {
				path string
				flag experimentalsys.Oflag
			}{{"fifo", rdonly}, {"fifo", wronly}, {"fifo", rdwr}, {"fifo", rdonly | experimentalsys.O_NONBLOCK}, {"sock", rdonly}} {
				_, errno := m.OpenFile(c.path, c.flag, 0)
				require.Equal(t, experimentalsys.ENOTSUP, errno, "%s %v", c.path, c.flag)
			}
			require.Zero(t, m.shared.files.n.Load(), "the refused opens gave their descriptors back")
			st, errno := m.Stat("fifo")
			require.Zero(t, errno)
			require.NotZero(t, st.Mode&os.ModeNamedPipe)

			for _, nb := range []bool{false, true} {
				flag := rdonly
				if nb {
					flag |= experimentalsys.O_NONBLOCK
				}
				f, errno := m.OpenFile("f", flag, 0)
				require.Zero(t, errno)
				fl, err := unixFcntlFlags(int(f.(*mountFile).fd))
				require.NoError(t, err)
				require.Equal(t, nb, fl&syscall.O_NONBLOCK != 0, "O_NONBLOCK as the guest asked")
				require.Zero(t, f.Close())
			}
		})
	}
}

// unixFcntlFlags is fcntl(fd, F_GETFL).
func unixFcntlFlags(fd int) (int, error) {
	r, _, e := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
