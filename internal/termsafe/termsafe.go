// Package termsafe escapes text for a terminal: what a file name, a
// reason or a guest's stderr holds is anyone's bytes, and an escape
// sequence in one could rewrite what a person sees. runner batch and the
// other commands print such text through String; package batch builds its
// messages with it.
package termsafe

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// String is s as runner batch shows it on a terminal (its summary,
// failure lines, progress, messages): file names, reasons and guest
// stderr are anyone's bytes, and an escape sequence in one could move the
// cursor, rewrite the summary line or the window title. Every control
// character but the tab (C0, DEL and C1) is written as an escape (\n, \r,
// \x1b, \u009b), as are the Unicode marks that reorder text on screen
// (bidirectional overrides and isolates, line and paragraph separators)
// and each byte that is not UTF-8 (\xff). A backslash is left as it is,
// so the escapes are for reading, not for undoing. --json output is not
// escaped: JSON encodes these itself.
func String(s string) string {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c >= 0x7f {
			break
		}
	}
	if i == len(s) {
		return s // the common case: printable ASCII
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(Hex2(s[i]))
		case r == '\t':
			b.WriteByte('\t')
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(Hex2(byte(r)))
		case r >= 0x80 && r <= 0x9f, reordersText(r):
			b.WriteString(`\u`)
			q := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(q)) + q)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Hex2 is c in two hex digits.
func Hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

// reordersText reports whether r is a Unicode mark that changes how the
// text around it is shown (the bidirectional controls) or breaks a line.
func reordersText(r rune) bool {
	switch {
	case r == 0x061c, r == 0x200e, r == 0x200f: // arabic letter mark, LRM, RLM
		return true
	case r >= 0x202a && r <= 0x202e: // embeddings and overrides
		return true
	case r >= 0x2066 && r <= 0x2069: // isolates
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}
