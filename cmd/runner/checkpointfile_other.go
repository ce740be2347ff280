//go:build !unix

package main

import "os"

// checkpointOpenFlags: see checkpointfile_unix.go.
const checkpointOpenFlags = os.O_RDONLY
