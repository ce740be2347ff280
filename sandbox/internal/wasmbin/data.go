package wasmbin

// DataEntry is one segment of a data section: active for memory 0 at an
// i32.const offset, or passive.
type DataEntry struct {
	Passive bool
	Offset  uint32 // active: where in memory 0 Data goes
	Data    []byte
	Raw     []byte // the entry's whole encoding
}

// DataEntries reads a data section's payload whose segments are active
// for memory 0 at i32.const offsets, or passive; anything else (an offset
// from a global, a memory index, malformed bytes) returns false. It is
// the one decoder of data sections for data merging and memory images;
// the rewrite's validation reads every other form too.
func DataEntries(p []byte) ([]DataEntry, bool) {
	count, n, err := U32(p)
	if err != nil || uint64(count) > uint64(len(p)) {
		return nil, false
	}
	p = p[n:]
	out := make([]DataEntry, 0, count)
	for range count {
		entry := p
		flag, n, err := U32(p)
		if err != nil {
			return nil, false
		}
		p = p[n:]
		var e DataEntry
		switch flag {
		case 0: // active, memory 0, offset expression
			if len(p) < 1 || p[0] != 0x41 { // i32.const
				return nil, false
			}
			off, n, err := S32(p[1:])
			if err != nil || len(p) < 1+n+1 || p[1+n] != 0x0b { // end
				return nil, false
			}
			p = p[1+n+1:]
			e.Offset = uint32(off)
		case 1: // passive
			e.Passive = true
		default: // active with a memory index, or malformed
			return nil, false
		}
		size, n, err := U32(p)
		if err != nil || uint64(size) > uint64(len(p)-n) {
			return nil, false
		}
		e.Data = p[n : n+int(size)]
		p = p[n+int(size):]
		e.Raw = entry[:len(entry)-len(p)]
		out = append(out, e)
	}
	return out, len(p) == 0
}
