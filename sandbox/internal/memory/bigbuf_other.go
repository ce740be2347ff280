//go:build !linux

package memory

// TransientBuffer returns a buffer of n bytes for a large, short-lived
// read, and the function that frees it (bigbuf_linux.go maps huge pages;
// here it is the Go heap's).
func TransientBuffer(n int) ([]byte, func()) {
	return make([]byte, n), func() {}
}
