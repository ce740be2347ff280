package wasmbin

import "errors"

// ErrEOF is returned when the input ends inside an item.
var ErrEOF = errors.New("unexpected end")

// ErrBadLEB is returned for a LEB128 number wazero would refuse: too many
// bytes, or unused bits set in the last one.
var ErrBadLEB = errors.New("bad LEB128 number")

// U32 reads an unsigned LEB128 number of at most 32 bits from the start
// of b (wazero's leb128.LoadUint32: at most 5 bytes, the unused bits of
// the fifth zero) and returns it and the bytes it took. Like every reader
// here, on an error it returns the bytes it read before it found it.
func U32(b []byte) (uint32, int, error) {
	var v uint32
	var s uint
	for i := 0; i < 5; i++ {
		if i >= len(b) {
			return 0, i, ErrEOF
		}
		c := b[i]
		if c < 0x80 {
			if i == 4 && c&0xf0 != 0 {
				return 0, 5, ErrBadLEB
			}
			return v | uint32(c)<<s, i + 1, nil
		}
		v |= uint32(c&0x7f) << s
		s += 7
	}
	return 0, 5, ErrBadLEB
}

// S32 reads a signed LEB128 number of at most 32 bits (wazero's
// leb128.LoadInt32) and returns it and the bytes it took.
func S32(b []byte) (int32, int, error) {
	var v int32
	var shift uint
	for i := 1; ; i++ {
		if i > len(b) {
			return 0, i - 1, ErrEOF
		}
		c := b[i-1]
		v |= int32(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 32 && c&0x40 != 0 {
				v |= ^0 << shift
			}
			unused := c & 0b00110000
			switch {
			case i == 5 && v < 0 && unused != 0b00110000, i == 5 && v >= 0 && unused != 0:
				return 0, i, ErrBadLEB
			}
			return v, i, nil
		}
		if i == 5 {
			return 0, i, ErrBadLEB
		}
	}
}

// S33 reads a signed LEB128 number of at most 33 bits, as a block type is
// encoded (wazero's leb128.DecodeInt33AsInt64), and returns it and the
// bytes it took.
func S33(b []byte) (int64, int, error) {
	var v, c int64
	var shift uint
	n := 0
	for shift < 35 {
		if n >= len(b) {
			return 0, n, ErrEOF
		}
		c = int64(b[n])
		v |= (c & 0x7f) << shift
		shift += 7
		n++
		if c&0x80 == 0 {
			break
		}
	}
	if shift < 33 && c&0x40 != 0 {
		v |= (1<<33 - 1) << shift
	}
	v &= 1<<33 - 1
	if v&(1<<32) != 0 {
		v -= 1 << 33
	}
	unused := c & 0b00100000
	switch {
	case c&0x80 != 0, // five bytes, still continued
		n == 5 && v < 0 && unused != 0b00100000,
		n == 5 && v >= 0 && unused != 0:
		return 0, n, ErrBadLEB
	}
	return v, n, nil
}

// S64 checks a signed LEB128 number of at most 64 bits (wazero's
// leb128.DecodeInt64) and returns the bytes it takes; its value is not
// needed.
func S64(b []byte) (int, error) {
	for i := 1; ; i++ {
		if i > len(b) {
			return i - 1, ErrEOF
		}
		c := b[i-1]
		if c&0x80 == 0 {
			if i == 10 {
				// The tenth byte holds bit 63; wazero wants bits 1-5
				// to repeat it (and ignores bit 6).
				if u := c & 0b00111110; (c&1 == 1 && u != 0b00111110) || (c&1 == 0 && u != 0) {
					return i, ErrBadLEB
				}
			}
			return i, nil
		}
		if i == 10 {
			return i, ErrBadLEB
		}
	}
}

// S64Value reads a signed LEB128 number of at most 64 bits, as S64
// checks it, and returns its value and the bytes it takes.
func S64Value(b []byte) (int64, int, error) {
	n, err := S64(b)
	if err != nil {
		return 0, n, err
	}
	var v int64
	var shift uint
	for i := 0; i < n; i++ {
		v |= int64(b[i]&0x7f) << shift
		shift += 7
	}
	if shift < 64 && b[n-1]&0x40 != 0 {
		v |= -1 << shift
	}
	return v, n, nil
}

// AppendSLEB appends v as a signed LEB128 number, in the fewest bytes
// (an i32.const's or i64.const's immediate, a block type).
func AppendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
