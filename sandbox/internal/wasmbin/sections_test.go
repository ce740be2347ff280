package wasmbin

import (
	"bytes"
	"testing"
)

var header = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

func mod(secs ...[]byte) []byte { return append(bytes.Clone(header), bytes.Join(secs, nil)...) }

// TestSections checks the section split, its refusals, and the memory
// minimum read from section 5.
func TestSections(t *testing.T) {
	memory := []byte{SecMemory, 4, 1, 1, 3, 9} // one memory, min 3, max 9
	custom := []byte{SecCustom, 2, 1, 'x'}
	m := mod(custom, memory)
	secs, ok := Sections(m)
	if !ok || len(secs) != 2 || secs[1].ID != SecMemory || secs[1].Header != 12 || secs[1].Start != 14 || secs[1].End != 18 {
		t.Fatalf("Sections = %+v, %t", secs, ok)
	}
	if min, err := DeclaredMemoryMin(m); err != nil || min != 3 {
		t.Errorf("DeclaredMemoryMin = %d, %v; want 3", min, err)
	}
	if min, err := DeclaredMemoryMin(mod(custom)); err != nil || min != 0 {
		t.Errorf("no memory: DeclaredMemoryMin = %d, %v; want 0", min, err)
	}
	for name, bad := range map[string][]byte{
		"bad magic":              append([]byte{0, 'a', 's', 'n'}, header[4:]...),
		"short":                  header[:6],
		"section past the end":   mod([]byte{SecCustom, 9, 1, 'x'}),
		"section size overlong":  mod([]byte{SecCustom, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}),
		"section size truncated": mod([]byte{SecCustom, 0x80}),
	} {
		if _, ok := Sections(bad); ok {
			t.Errorf("%s: Sections accepted it", name)
		}
		if _, err := DeclaredMemoryMin(bad); err == nil && name != "short" {
			t.Errorf("%s: DeclaredMemoryMin accepted it", name)
		}
	}
}

// TestDataEntries checks the one data-section decoder: active segments
// for memory 0 at i32.const offsets and passive ones, and nothing else.
func TestDataEntries(t *testing.T) {
	active := []byte{0x00, 0x41, 0x80, 0x08, 0x0b, 2, 'h', 'i'} // at 1024
	passive := []byte{0x01, 1, 'p'}
	p := append(append([]byte{2}, active...), passive...)
	got, ok := DataEntries(p)
	if !ok || len(got) != 2 {
		t.Fatalf("DataEntries = %+v, %t", got, ok)
	}
	if got[0].Passive || got[0].Offset != 1024 || string(got[0].Data) != "hi" || !bytes.Equal(got[0].Raw, active) {
		t.Errorf("active entry %+v", got[0])
	}
	if !got[1].Passive || string(got[1].Data) != "p" || !bytes.Equal(got[1].Raw, passive) {
		t.Errorf("passive entry %+v", got[1])
	}
	for name, bad := range map[string][]byte{
		"global offset":   {1, 0x00, 0x23, 0x00, 0x0b, 0},
		"memory index":    {1, 0x02, 0x00, 0x41, 0x00, 0x0b, 0},
		"size past end":   {1, 0x01, 5, 'x'},
		"trailing bytes":  {1, 0x01, 0, 0xff},
		"count too large": {9, 0x01, 0},
		"no end opcode":   {1, 0x00, 0x41, 0x00, 0x00, 0},
		"offset overlong": {1, 0x00, 0x41, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x0b, 0},
	} {
		if _, ok := DataEntries(bad); ok {
			t.Errorf("%s: DataEntries accepted it", name)
		}
	}
}

// TestImportsMemory checks that a memory import, or a malformed import
// section, counts as importing memory.
func TestImportsMemory(t *testing.T) {
	fn := []byte{1, 1, 'm', 1, 'f', 0x00, 0x00}
	mem := []byte{1, 1, 'm', 1, 'f', 0x02, 0x00, 0x01}
	table := []byte{1, 1, 'm', 1, 't', 0x01, 0x70, 0x01, 0x01, 0x02}
	if ImportsMemory(fn) || ImportsMemory(table) {
		t.Error("a function or table import counts as a memory")
	}
	if !ImportsMemory(mem) || !ImportsMemory([]byte{1, 1, 'm'}) {
		t.Error("a memory import, or a malformed section, does not count")
	}
}
