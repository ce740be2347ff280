package testutil

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// ReadFile is the content of the file at path; it fails t if the file
// cannot be read.
func ReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}
