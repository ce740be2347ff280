//go:build !linux

package main

// writeLinked needs O_TMPFILE and linkat through /proc (Linux): elsewhere
// outputs are written to named temporary files.
func (o *outDir) writeLinked(string, []byte) error { return errNoLink }
