//go:build unix

package main

import (
	"os"
	"syscall"
)

// checkpointOpenFlags opens a checkpoint without blocking: a FIFO or a
// device put at its path is refused as not a regular file, never waited on.
const checkpointOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK
