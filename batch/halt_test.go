package batch

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// ParseHalt reads GNU parallel's spelling and refuses the rest, saying
// what it wants; reached applies it as parallel does.
func TestParseHalt(t *testing.T) {
	for in, want := range map[string]Halt{
		"": {}, "never": {}, "0": {}, "1": {Fail: 1}, "2": {Now: true, Fail: 1},
		"now,fail=1": {Now: true, Fail: 1}, "soon,fail=3": {Fail: 3}, "soon,fail=10%": {FailPercent: 10},
		"now,fail=2.5%": {Now: true, FailPercent: 2.5},
	} {
		h, err := ParseHalt(in)
		require.NoError(t, err, in)
		require.Equal(t, want, h, in)
		if in != "" && in != "0" && in != "1" && in != "2" {
			require.Equal(t, in, h.String())
		}
	}
	for _, in := range []string{"now", "later,fail=1", "now,fail=0", "soon,fail=x", "now,fail=0%", "now,fail=101%", "now,success=1", "now,done=1", "now,fail"} {
		_, err := ParseHalt(in)
		require.ErrorContains(t, err, "want now|soon,fail=N", in)
	}
	require.False(t, Halt{}.reached(100, 100))
	require.True(t, Halt{Fail: 2}.reached(2, 2))
	require.False(t, Halt{Fail: 2}.reached(1, 50))
	require.False(t, Halt{FailPercent: 10}.reached(1, 2), "fewer than 3 ended")
	require.True(t, Halt{FailPercent: 10}.reached(1, 10))
	require.False(t, Halt{FailPercent: 10}.reached(1, 11))
}

// The replacement strings mean what GNU parallel's do.
func TestExpand(t *testing.T) {
	for _, c := range []struct{ tmpl, name, want string }{
		{"{}", "sub/photo.raw.png", "sub/photo.raw.png"},
		{"{.}", "sub/photo.raw.png", "sub/photo.raw"},
		{"{/}", "sub/photo.raw.png", "photo.raw.png"},
		{"{//}", "sub/photo.raw.png", "sub"},
		{"{//}", "photo.png", "."},
		{"{/.}", "sub/photo.raw.png", "photo.raw"},
		{"{#}-{#}", "x", "7-7"},
		{"{.}", "a.d/b", "a.d/b"},
		{"{.}", "dir/.profile", "dir/.profile"},
		{"x{y}{}{", "n", "x{y}n{"},
		{"no braces", "n", "no braces"},
	} {
		require.Equal(t, c.want, expand(c.tmpl, c.name, 7), "%s of %s", c.tmpl, c.name)
	}
}

// An input's label is its path, escaped when a label cannot hold it.
func TestInputLabel(t *testing.T) {
	require.Equal(t, "/in/a.txt", inputLabel("/in/a.txt"))
	bad := inputLabel("/in/\xff\x1b.txt")
	require.True(t, utf8.ValidString(bad))
	require.Equal(t, `/in/\xff\x1b.txt`, bad)
	long := inputLabel("/" + strings.Repeat("é", 2000))
	require.LessOrEqual(t, len(long), tasks.MaxLabelValue)
	require.True(t, utf8.ValidString(long))
	require.True(t, strings.HasSuffix(long, "..."))
}
