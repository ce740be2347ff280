//go:build !wasip1

package plugin

// Config returns the manifest's value for key; outside wasip1 there is no
// manifest: false.
func Config(string) (string, bool) { return "", false }

// Alloc is the convention's alloc for a plugin's tests on the host: it
// returns the input buffer's address and length as the host would pass
// them, after copying in into it.
func Alloc(in []byte) (ptr, n uint32) {
	copy(allocInput(uint32(len(in))), in)
	return Ptr(input), uint32(len(in))
}
