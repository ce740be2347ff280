package wasmbin

import (
	"bytes"
	"errors"
	"testing"
)

// TestReader: reads move Pos past what they read, and a read past the end
// fails with ErrEOF without moving it.
func TestReader(t *testing.T) {
	r := Reader{B: []byte{0x2a, 0xe5, 0x8e, 0x26, 'a', 'b', 0x7f}}
	if c, err := r.Byte(); c != 0x2a || err != nil {
		t.Fatalf("Byte = %#x, %v", c, err)
	}
	if v, err := r.U32(); v != 624485 || err != nil || r.Pos != 4 {
		t.Fatalf("U32 = %d, %v at %d", v, err, r.Pos)
	}
	if b, err := r.Bytes(2); !bytes.Equal(b, []byte("ab")) || err != nil {
		t.Fatalf("Bytes = %q, %v", b, err)
	}
	if _, err := r.Bytes(2); !errors.Is(err, ErrEOF) || r.Pos != 6 {
		t.Fatalf("Bytes past the end = %v at %d", err, r.Pos)
	}
	if v, err := r.S32(); v != -1 || err != nil || !r.EOF() || len(r.Rest()) != 0 {
		t.Fatalf("S32 = %d, %v; EOF %v", v, err, r.EOF())
	}
	if _, err := r.Byte(); !errors.Is(err, ErrEOF) || r.Pos != 7 {
		t.Fatalf("Byte at the end = %v at %d", err, r.Pos)
	}
}
