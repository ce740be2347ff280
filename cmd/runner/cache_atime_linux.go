package main

import (
	"io/fs"
	"syscall"
	"time"
)

// accessTime is a file's last access time (zero if unknown).
func accessTime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Unix())
	}
	return time.Time{}
}
