package batch

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// readAhead gives every input, in order, across chunks and readers: each
// read and hashed (held within the budget, else not), an unreadable one
// with its error at its own place; and it stops when told.
func TestReadAhead(t *testing.T) {
	dir := t.TempDir()
	d, err := openInputDir(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	var inputs []*batchInput
	for i := range 1234 {
		in := &batchInput{name: fmt.Sprintf("f%04d", i), dir: d}
		in.path = filepath.Join(dir, in.name)
		data := fmt.Appendf(nil, "input %d\n", i)
		in.size = int64(len(data))
		if i != 700 { // f0700 is missing: unreadable
			require.NoError(t, os.WriteFile(in.path, data, 0o644))
		}
		inputs = append(inputs, in)
	}
	b := &batchRun{inputs: inputs}
	b.hold.left = 5000 // about 400 inputs held, the rest read again at their attempts

	done := make(chan struct{})
	var got []*batchInput
	held := 0
	for c := range b.readAhead(100, done) {
		require.Len(t, c.errs, len(c.inputs))
		for k, in := range c.inputs {
			got = append(got, in)
			if in.name == "f0700" {
				require.ErrorIs(t, c.errs[k], os.ErrNotExist)
				continue
			}
			require.NoError(t, c.errs[k])
			i, err := strconv.Atoi(in.name[1:])
			require.NoError(t, err)
			want := fmt.Appendf(nil, "input %d\n", i)
			require.Equal(t, sha256.Sum256(want), in.sha, in.name)
			if in.data != nil {
				held++
				require.Equal(t, want, in.data)
			}
		}
	}
	require.Equal(t, inputs, got, "every input, in order")
	require.Greater(t, held, 300)
	require.Less(t, held, len(inputs)-1, "within the budget")
	require.GreaterOrEqual(t, b.hold.left, int64(0), "no more held than the budget")

	// Told to stop, it ends after the chunk it is reading.
	for _, in := range inputs {
		in.data, in.sha = nil, [32]byte{}
	}
	stop := make(chan struct{})
	reads := b.readAhead(100, stop)
	<-reads
	close(stop)
	n := 0
	for range reads {
		n++
	}
	require.LessOrEqual(t, n, 2, "a stopped reader sends at most the chunks it had read")
	require.Equal(t, [32]byte{}, inputs[len(inputs)-1].sha, "the last chunk was never read")
}
