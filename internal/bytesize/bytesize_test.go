package bytesize

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFormat checks the unit Format picks, and the plain number it falls back to.
func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 1000: "1000", 1 << 10: "1KiB", 64 << 20: "64MiB", 3 << 30: "3GiB", 1536: "1536", 1025 << 10: "1025KiB",
	} {
		require.Equal(t, want, Format(n), n)
	}
}

// TestReadAtMost checks a nil reader, the cap met, no cap and the cap passed.
func TestReadAtMost(t *testing.T) {
	b, err := ReadAtMost(nil, 10)
	require.NoError(t, err)
	require.Nil(t, b)
	b, err = ReadAtMost(bytes.NewReader([]byte("0123456789")), 10)
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(b))
	b, err = ReadAtMost(bytes.NewReader([]byte("0123456789")), 0)
	require.NoError(t, err)
	require.Len(t, b, 10)
	_, err = ReadAtMost(bytes.NewReader(make([]byte, 2<<10)), 1<<10)
	require.EqualError(t, err, "more than 1KiB")
}
