//go:build !linux

package main

import (
	"io/fs"
	"time"
)

// accessTime is a file's last access time: unknown here (zero), so the
// cache is pruned by modification time.
func accessTime(fs.FileInfo) time.Time { return time.Time{} }
