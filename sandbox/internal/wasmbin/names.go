package wasmbin

import "encoding/binary"

// RenumberNames re-encodes a name section, p its whole payload and from
// where its own name ("name") ends: the function indices of its function
// names (subsection 1) and local names (subsection 2) mapped by shift,
// other subsections kept as they are. ok is false where a subsection's
// size, or a function index or a name in those two, is malformed or runs
// past its input; a name map's count or a function's count of locals that
// is malformed reads as zero.
func RenumberNames(p []byte, from int, shift func(uint32) uint32) (out []byte, ok bool) {
	out = append(make([]byte, 0, len(p)+16), p[:from]...)
	pos := from
	for pos < len(p) {
		id := p[pos]
		size, n, err := U32(p[pos+1:])
		pos += 1 + n
		if err != nil || uint64(size) > uint64(len(p)-pos) {
			return nil, false
		}
		sub := p[pos : pos+int(size)]
		pos += int(size)
		if id != 1 && id != 2 {
			out = AppendSection(out, id, sub)
			continue
		}
		q, ok := renumberNameMap(sub, id == 2, shift)
		if !ok {
			return nil, false
		}
		out = AppendSection(out, id, q)
	}
	return out, true
}

// renumberNameMap re-encodes a name map of functions (locals: an
// indirect one, each function's a map of its locals' names), each
// function index mapped by shift.
func renumberNameMap(sub []byte, locals bool, shift func(uint32) uint32) ([]byte, bool) {
	c, pos, _ := U32(sub)
	q := binary.AppendUvarint(make([]byte, 0, len(sub)+8), uint64(c))
	for range c {
		f, n, err := U32(sub[pos:])
		pos += n
		if err != nil {
			return nil, false
		}
		q = binary.AppendUvarint(q, uint64(shift(f)))
		from := pos
		if !locals {
			pos, err = skipName(sub, pos)
		} else {
			k, n, _ := U32(sub[pos:])
			pos += n
			// At most one pass per local named in sub, whatever k says: a
			// read past the end stops the loop, not its count.
			for i := uint32(0); i < k && err == nil; i++ {
				var m int
				_, m, err = U32(sub[pos:])
				pos += m
				if err == nil {
					pos, err = skipName(sub, pos)
				}
			}
		}
		if err != nil {
			return nil, false
		}
		q = append(q, sub[from:pos]...)
	}
	return q, true
}

// skipName returns where the length-prefixed name at b[pos:] ends; on an
// error, where its length ends.
func skipName(b []byte, pos int) (int, error) {
	l, n, err := U32(b[pos:])
	pos += n
	if err != nil {
		return pos, err
	}
	if uint64(l) > uint64(len(b)-pos) {
		return pos, ErrEOF
	}
	return pos + int(l), nil
}
