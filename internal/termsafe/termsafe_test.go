package termsafe

import (
	"bytes"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// String escapes every control character but the tab, the marks that
// reorder text, and bytes that are not UTF-8; printable text (any
// script) is kept as it is.
func TestTermSafe(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain name.txt":                   "plain name.txt",
		"tab\tkept":                        "tab\tkept",
		"héllo, 世界":                        "héllo, 世界",
		"evil\x1b[2J\x1b]0;pwned\x07.txt":  `evil\x1b[2J\x1b]0;pwned\x07.txt`,
		"line\nforged: 0 failed\r":         `line\nforged: 0 failed\r`,
		"del\x7f nul\x00":                  `del\x7f nul\x00`,
		"c1 csi \u009b31m":                 `c1 csi \u009b31m`,
		"bidi \u202eexe.txt":               `bidi \u202eexe.txt`,
		"isolate \u2066x\u2069":            `isolate \u2066x\u2069`,
		"not utf-8 \xff\xfe, cut \xe4\xb8": `not utf-8 \xff\xfe, cut \xe4\xb8`,
		"":                                 "",
	} {
		require.Equal(t, want, String(in), "%q", in)
	}
	// Whatever the bytes, the result is UTF-8 without a control character
	// but the tab.
	var all bytes.Buffer
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	all.WriteString("\u0085\u009b\u200e\u2028")
	got := String(all.String())
	require.True(t, utf8.ValidString(got))
	for _, r := range got {
		require.False(t, unicode.IsControl(r) && r != '\t', "%U left in %q", r, got)
		require.False(t, reordersText(r), "%U left", r)
	}
}
