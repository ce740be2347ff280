package wasmbin

import (
	"errors"
	"testing"
)

// TestU32Strict pins what the strict reader accepts and refuses, as
// wazero's leb128.LoadUint32 does.
func TestU32Strict(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		v    uint32
		n    int
		err  error
	}{
		{"zero", []byte{0x00}, 0, 1, nil},
		{"one byte", []byte{0x7f}, 127, 1, nil},
		{"two bytes", []byte{0xe5, 0x8e, 0x26}, 624485, 3, nil},
		{"max", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 1<<32 - 1, 5, nil},
		{"trailing bytes stay", []byte{0x01, 0x02}, 1, 1, nil},
		// Overlong but within 5 bytes: wazero accepts it, so do we.
		{"overlong zero", []byte{0x80, 0x00}, 0, 2, nil},
		{"overlong five bytes", []byte{0x81, 0x80, 0x80, 0x80, 0x00}, 1, 5, nil},
		{"too many bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, 5, ErrBadLEB},
		{"unused bits in the fifth byte", []byte{0xff, 0xff, 0xff, 0xff, 0x1f}, 0, 5, ErrBadLEB},
		{"high bit of the fifth byte's value", []byte{0x80, 0x80, 0x80, 0x80, 0x70}, 0, 5, ErrBadLEB},
		{"empty", nil, 0, 0, ErrEOF},
		{"truncated", []byte{0x80, 0x80}, 0, 2, ErrEOF},
	} {
		v, n, err := U32(tc.in)
		if v != tc.v || n != tc.n || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: U32(% x) = %d, %d, %v; want %d, %d, %v", tc.name, tc.in, v, n, err, tc.v, tc.n, tc.err)
		}
	}
}

// TestSignedStrict pins the signed readers' rules: at most 5 bytes (S32,
// S33) or 10 (S64), and the unused bits of the last byte repeating the
// sign.
func TestSignedStrict(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		v    int32
		err  error
	}{
		{"minus one", []byte{0x7f}, -1, nil},
		{"min", []byte{0x80, 0x80, 0x80, 0x80, 0x78}, -1 << 31, nil},
		{"max", []byte{0xff, 0xff, 0xff, 0xff, 0x07}, 1<<31 - 1, nil},
		{"overlong minus one", []byte{0xff, 0x7f}, -1, nil},
		{"too many bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, ErrBadLEB},
		{"unused bits set, positive", []byte{0xff, 0xff, 0xff, 0xff, 0x17}, 0, ErrBadLEB},
		{"unused bits clear, negative", []byte{0x80, 0x80, 0x80, 0x80, 0x48}, 0, ErrBadLEB},
		{"truncated", []byte{0x80}, 0, ErrEOF},
	} {
		v, _, err := S32(tc.in)
		if v != tc.v || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("S32 %s: got %d, %v; want %d, %v", tc.name, v, err, tc.v, tc.err)
		}
	}
	for _, tc := range []struct {
		name string
		in   []byte
		v    int64
		err  error
	}{
		{"empty block type", []byte{0x40}, -64, nil},
		{"type index", []byte{0x05}, 5, nil},
		{"largest index", []byte{0xff, 0xff, 0xff, 0xff, 0x0f}, 1<<32 - 1, nil},
		{"still continued", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 0, ErrBadLEB},
		{"unused bit set", []byte{0xff, 0xff, 0xff, 0xff, 0x2f}, 0, ErrBadLEB},
		{"truncated", []byte{0x80}, 0, ErrEOF},
	} {
		v, _, err := S33(tc.in)
		if v != tc.v || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("S33 %s: got %d, %v; want %d, %v", tc.name, v, err, tc.v, tc.err)
		}
	}
	for _, tc := range []struct {
		name string
		in   []byte
		n    int
		err  error
	}{
		{"one byte", []byte{0x3f}, 1, nil},
		{"min", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, 10, nil},
		{"max", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}, 10, nil},
		{"eleven bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 10, ErrBadLEB},
		{"tenth byte does not repeat bit 63", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, 10, ErrBadLEB},
		{"truncated", []byte{0x80, 0x80}, 2, ErrEOF},
	} {
		n, err := S64(tc.in)
		if n != tc.n || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("S64 %s: got %d, %v; want %d, %v", tc.name, n, err, tc.n, tc.err)
		}
	}
}

// TestAppendSLEB: AppendSLEB writes the shortest signed LEB128, which
// S64Value reads back.
func TestAppendSLEB(t *testing.T) {
	for v, want := range map[int64]string{0: "\x00", -1: "\x7f", 63: "\x3f", 64: "\xc0\x00", -64: "\x40", -65: "\xbf\x7f"} {
		if got := string(AppendSLEB([]byte("x"), v)); got != "x"+want {
			t.Errorf("AppendSLEB(%d) = %q, want %q", v, got[1:], want)
		}
	}
	for _, v := range []int64{1 << 31, -1 << 31, 1<<63 - 1, -1 << 63, 123456789} {
		b := AppendSLEB(nil, v)
		got, n, err := S64Value(b)
		if err != nil || got != v || n != len(b) {
			t.Errorf("S64Value(AppendSLEB(%d)) = %d, %d, %v; want %d, %d", v, got, n, err, v, len(b))
		}
	}
}
