package sqlite

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LockHolder reports whether a process holds the exclusive lock of the
// store at path (a `runner serve` on it), and its pid. It reads
// /proc/locks and takes no lock itself, so it never gets in the way of a
// runner that is starting. No lock file: nobody holds it.
func LockHolder(path string) (pid int, held bool, err error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path+".lock", &st); err != nil {
		if os.IsNotExist(err) {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("sqlite: lock holder of %s: %w", path, err)
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: lock holder of %s: %w", path, err)
	}
	defer func() { _ = f.Close() }()
	// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF": kind, pid, and
	// the file as major:minor:inode, the device numbers in hex.
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	fileID := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "WRITE" {
			continue
		}
		if fields[5] != fileID {
			continue
		}
		if pid, err = strconv.Atoi(fields[4]); err == nil {
			return pid, true, nil
		}
	}
	return 0, false, sc.Err()
}
