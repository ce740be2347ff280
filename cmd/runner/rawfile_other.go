//go:build !unix

package main

import (
	"io"
	"os"
)

// openRead opens path for reading (os.Open; see rawfile_unix.go).
func openRead(path string) (io.ReadCloser, error) { return os.Open(path) }
