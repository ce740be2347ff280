package wasmbin

import (
	"bytes"
	"testing"
)

// TestRenumberNames: function and local names have their function indices
// mapped, the module name and an unknown subsection are kept, and a
// subsection running past its input is refused, at once even where a
// count says billions.
func TestRenumberNames(t *testing.T) {
	head := AppendName(nil, "name")
	sub := func(id byte, b ...byte) []byte { return AppendSection(nil, id, b) }
	build := func(subs ...[]byte) []byte { return append(append([]byte(nil), head...), bytes.Join(subs, nil)...) }
	shift := func(f uint32) uint32 { return f + 10 }

	in := build(
		sub(0, 1, 'm'),
		sub(1, 2, 0, 1, 'a', 3, 2, 'b', 'c'),
		sub(2, 1, 4, 1, 0, 1, 'x'),
		sub(9, 7, 7),
	)
	want := build(
		sub(0, 1, 'm'),
		sub(1, 2, 10, 1, 'a', 13, 2, 'b', 'c'),
		sub(2, 1, 14, 1, 0, 1, 'x'),
		sub(9, 7, 7),
	)
	got, ok := RenumberNames(in, len(head), shift)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("RenumberNames = %x, %v; want %x, true", got, ok, want)
	}

	for _, bad := range [][]byte{
		append(build(), 1, 5, 1),    // size past the end
		build(sub(1, 1, 0, 5, 'a')), // a name past its subsection
		build(sub(1, 1, 0x80)),      // a function index cut short
		// a function claiming 2^32-1 named locals, with none: refused
		// at the first missing one, not after counting them all
		build(sub(2, 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f)),
	} {
		if got, ok := RenumberNames(bad, len(head), shift); ok {
			t.Errorf("RenumberNames(%x) = %x, true; want false", bad, got)
		}
	}
}
