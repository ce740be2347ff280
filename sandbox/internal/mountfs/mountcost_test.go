//go:build linux

package mountfs

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestMountCostInterleaved measures, in one process and interleaved round
// by round (the order alternates), what the disk budget costs a 4 KiB
// write (write(2) at the file's offset: one more lseek(2)) against no
// budget, and what the non-blocking open (O_NONBLOCK, fstat, and
// F_SETFL to clear it) costs an open + close of a file at the top of an
// openat2 mount against the plain openat2 open it replaced. It is a
// measurement, not a test: it runs only with STINT_MOUNT_BENCH=ROUNDS set,
// and prints each variant's median ns/op and the ratios.
//
//	STINT_MOUNT_BENCH=31 go test ./sandbox/internal/mountfs -run TestMountCostInterleaved -v -count=1
func TestMountCostInterleaved(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("STINT_MOUNT_BENCH"))
	if rounds <= 0 {
		t.Skip("a measurement: set STINT_MOUNT_BENCH=ROUNDS")
	}
	const ops = 2000
	buf := make([]byte, 4096)
	writer := func(maxBytes, maxFiles int64) func() time.Duration {
		m, err := newMountFS(t.TempDir(), NewBudget(maxBytes, maxFiles))
		require.NoError(t, err)
		t.Cleanup(func() { _ = m.Close() })
		f, errno := m.OpenFile("f", rdwr|creat, 0o600)
		require.Zero(t, errno)
		t.Cleanup(func() { f.Close() })
		return func() time.Duration {
			start := time.Now()
			for i := range ops {
				if i%256 == 0 { // stay within 1 MiB: the page cache, not the disk
					_, errno := f.Seek(0, 0)
					require.Zero(t, errno)
				}
				_, errno := f.Write(buf)
				require.Zero(t, errno)
			}
			return time.Since(start) / ops
		}
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte("hello"), 0o644))
	m := openTestMount(t, dir, true)
	a := m.ops.(*atOps)
	opener := func(open func()) func() time.Duration {
		return func() time.Duration {
			start := time.Now()
			for range ops {
				open()
			}
			return time.Since(start) / ops
		}
	}
	variants := []struct {
		name string
		run  func() time.Duration
		ns   []float64
	}{
		{name: "write 4KiB, no budget", run: writer(-1, -1)},
		{name: "write 4KiB, budget", run: writer(1<<62, 1<<40)},
		{name: "open+close, openat2 as before", run: opener(func() {
			fd, err := a.openat2("f.txt", unix.O_RDONLY, 0)
			require.NoError(t, err)
			f := newMountFile(m, "f.txt", rdonly, 0, os.NewFile(uintptr(fd), "f.txt"))
			m.shared.files.take()
			require.Zero(t, f.Close())
		})},
		{name: "open+close, non-blocking", run: opener(func() {
			f, errno := m.OpenFile("f.txt", rdonly, 0)
			require.Zero(t, errno)
			require.Zero(t, f.Close())
		})},
	}
	for r := range rounds {
		for i := range variants {
			v := &variants[i]
			if r%2 == 1 {
				v = &variants[len(variants)-1-i]
			}
			v.ns = append(v.ns, float64(v.run()))
		}
	}
	med := func(x []float64) float64 { x = slices.Clone(x); slices.Sort(x); return x[len(x)/2] }
	for i, v := range variants {
		line := v.name + ": " + strconv.FormatFloat(med(v.ns), 'f', 0, 64) + " ns/op"
		if i%2 == 1 {
			line += ", " + strconv.FormatFloat(med(v.ns)/med(variants[i-1].ns), 'f', 2, 64) + "x the one before"
		}
		t.Log(line)
	}
}
