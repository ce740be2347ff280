package wasmbin

// Reader reads B from Pos, never past its end: the one cursor of the
// decoders that cut a module into its parts (package resume's and package
// rewrite's). A read that fails returns ErrEOF or ErrBadLEB, and moves
// Pos only past the bytes it read before it found the error (like U32).
type Reader struct {
	B   []byte
	Pos int
}

// EOF reports whether everything has been read.
func (r *Reader) EOF() bool { return r.Pos >= len(r.B) }

// Byte reads one byte.
func (r *Reader) Byte() (byte, error) {
	if r.Pos >= len(r.B) {
		return 0, ErrEOF
	}
	c := r.B[r.Pos]
	r.Pos++
	return c, nil
}

// Bytes returns the next n bytes (B's own, not a copy).
func (r *Reader) Bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.B)-r.Pos) {
		return nil, ErrEOF
	}
	s := r.B[r.Pos : r.Pos+int(n)]
	r.Pos += int(n)
	return s, nil
}

// Rest is what is left to read.
func (r *Reader) Rest() []byte { return r.B[min(r.Pos, len(r.B)):] }

// U32 reads an unsigned LEB128 number of at most 32 bits (U32).
func (r *Reader) U32() (uint32, error) {
	v, n, err := U32(r.Rest())
	r.Pos += n
	return v, err
}

// S32 reads a signed LEB128 number of at most 32 bits (S32).
func (r *Reader) S32() (int32, error) {
	v, n, err := S32(r.Rest())
	r.Pos += n
	return v, err
}

// S33 reads a signed LEB128 number of at most 33 bits, as a block type is
// encoded (S33).
func (r *Reader) S33() (int64, error) {
	v, n, err := S33(r.Rest())
	r.Pos += n
	return v, err
}

// S64 skips a signed LEB128 number of at most 64 bits (S64).
func (r *Reader) S64() error {
	n, err := S64(r.Rest())
	r.Pos += n
	return err
}
