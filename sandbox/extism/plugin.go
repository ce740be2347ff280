package extism

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/sandbox/internal/extismbridge"
	"github.com/stint-run/stint/sandbox/internal/extismkernel"
)

// ErrNotExtism is returned by CurrentPlugin's methods for the kernel
// memory when the guest is not an Extism plugin being called (a plugin of
// Stint's convention, or a task, that imports the function): it has no
// kernel memory.
var ErrNotExtism = errors.New("not an Extism plugin call: no kernel memory")

// CurrentPlugin is what a HostFunction's callback sees of the plugin it
// serves, as in Extism's go-sdk: its kernel memory, addressed by the
// offsets the plugin passes (ValueTypePTR values), every offset and length
// checked (an error, never a panic). Only valid during the callback.
type CurrentPlugin struct {
	call sandbox.Call
	k    *extismkernel.Kernel // nil: not an Extism plugin call
	fn   string               // module.name, for errors
}

func newCurrentPlugin(c sandbox.Call, fn string) *CurrentPlugin {
	return &CurrentPlugin{call: c, k: extismbridge.Kernel(c), fn: fn}
}

// Call is the call's identity and linear memory (Call.Plugin,
// Call.Config, Call.Read, ...), as a sandbox.HostFuncImpl sees them.
func (p *CurrentPlugin) Call() sandbox.Call { return p.call }

func (p *CurrentPlugin) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{p.fn}, args...)...)
}

// Alloc returns the offset of a new zeroed block of n bytes of kernel
// memory (0 for n == 0). Past the plugin's memory limit it returns an
// error and the call ends as memory_limit once the guest is back.
func (p *CurrentPlugin) Alloc(n uint64) (uint64, error) {
	if p.k == nil {
		return 0, ErrNotExtism
	}
	off, err := p.k.TryAlloc(n, uint64(p.call.MemorySize()))
	if err != nil {
		var ke *extismkernel.Error
		if errors.As(err, &ke) {
			return 0, p.errorf("alloc: %s", ke.Msg)
		}
		return 0, p.errorf("alloc: %v", err)
	}
	return off, nil
}

// Free frees the block at offset; 0, an unknown offset and a freed block
// are ignored, as by the plugin's own free.
func (p *CurrentPlugin) Free(offset uint64) error {
	if p.k == nil {
		return ErrNotExtism
	}
	p.k.Free(offset)
	return nil
}

// Length is the length of the live block at offset, or an error if there
// is none.
func (p *CurrentPlugin) Length(offset uint64) (uint64, error) {
	b, err := p.block(offset)
	return uint64(len(b)), err
}

func (p *CurrentPlugin) block(offset uint64) ([]byte, error) {
	if p.k == nil {
		return nil, ErrNotExtism
	}
	b, ok := p.k.LiveBlock(offset)
	if !ok {
		return nil, p.errorf("offset %d is not a live memory block of the plugin", offset)
	}
	return b, nil
}

// ReadBytes returns a copy of the live block at offset.
func (p *CurrentPlugin) ReadBytes(offset uint64) ([]byte, error) {
	b, err := p.block(offset)
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), b...), nil
}

// ReadString returns the live block at offset as a string.
func (p *CurrentPlugin) ReadString(offset uint64) (string, error) {
	b, err := p.block(offset)
	return string(b), err
}

// WriteBytes copies b into a new block and returns its offset (0 for an
// empty b), which the callback usually returns to the plugin.
func (p *CurrentPlugin) WriteBytes(b []byte) (uint64, error) {
	off, err := p.Alloc(uint64(len(b)))
	if err != nil || off == 0 {
		return off, err
	}
	dst, _ := p.k.Mem(off, uint64(len(b)))
	copy(dst, b)
	return off, nil
}

// WriteString is WriteBytes of s.
func (p *CurrentPlugin) WriteString(s string) (uint64, error) {
	return p.WriteBytes([]byte(s))
}

// Memory is the plugin's kernel memory, read and written at offsets with
// the methods of the same names as the go-sdk's Memory (wazero's
// api.Memory): only the memory in use, [8, Size()), can be reached.
func (p *CurrentPlugin) Memory() Memory { return Memory{k: p.k} }

// Memory is an Extism plugin's kernel memory as a host function sees it
// (CurrentPlugin.Memory): every access inside the memory in use, else
// false. Slices from Read are the memory itself: valid until the callback
// returns or allocates.
type Memory struct{ k *extismkernel.Kernel }

// Size is the end of the kernel memory in use.
func (m Memory) Size() uint32 {
	if m.k == nil {
		return 0
	}
	return uint32(min(m.k.Size(), 1<<32-1))
}

func (m Memory) span(offset, n uint32) ([]byte, bool) {
	if m.k == nil {
		return nil, false
	}
	return m.k.Mem(uint64(offset), uint64(n))
}

// Read returns the n bytes at offset.
func (m Memory) Read(offset, n uint32) ([]byte, bool) { return m.span(offset, n) }

// Write copies v to offset.
func (m Memory) Write(offset uint32, v []byte) bool {
	if uint64(len(v)) > 1<<32-1 {
		return false
	}
	b, ok := m.span(offset, uint32(len(v)))
	if ok {
		copy(b, v)
	}
	return ok
}

// ReadUint32Le reads a little-endian uint32 at offset.
func (m Memory) ReadUint32Le(offset uint32) (uint32, bool) {
	b, ok := m.span(offset, 4)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// WriteUint32Le writes v little-endian at offset.
func (m Memory) WriteUint32Le(offset, v uint32) bool {
	b, ok := m.span(offset, 4)
	if ok {
		binary.LittleEndian.PutUint32(b, v)
	}
	return ok
}

// ReadUint64Le reads a little-endian uint64 at offset.
func (m Memory) ReadUint64Le(offset uint32) (uint64, bool) {
	b, ok := m.span(offset, 8)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

// WriteUint64Le writes v little-endian at offset.
func (m Memory) WriteUint64Le(offset uint32, v uint64) bool {
	b, ok := m.span(offset, 8)
	if ok {
		binary.LittleEndian.PutUint64(b, v)
	}
	return ok
}
