//go:build !linux

package sandbox

// transientBuffer returns a buffer of n bytes for a large, short-lived
// read, and the function that frees it (bigbuf_linux.go maps huge pages;
// here it is the Go heap's).
func transientBuffer(n int) ([]byte, func()) {
	return make([]byte, n), func() {}
}
