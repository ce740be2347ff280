package testutil

import (
	"fmt"
	"os"
	"strings"
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

// TaskID is the task id that out, what a runner command printed (runner
// submit's id, with its newline), holds; it fails t if out holds none.
func TaskID(t testing.TB, out string) int64 {
	t.Helper()
	var id int64
	_, err := fmt.Sscan(strings.TrimSpace(out), &id)
	require.NoError(t, err, "task id from %q", out)
	return id
}
