package sandbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/extismkernel"
)

// ExtismUserModule is the import module under which Extism plugins import
// their host app's own functions (Extism's go-sdk's default namespace).
// An embedder defines them with NewHostFunctionWithStack and registers
// them with ExtismHostModules (Config.HostModules); a plugin imports them
// only if its manifest grants the module, like any other.
const ExtismUserModule = "extism:host/user"

// PTR is the value type of an offset in an Extism plugin's kernel memory:
// an i64 (Extism's ValueTypePTR).
const PTR = I64

// ExtismHostFunction is a host function for Extism plugins, defined as
// with Extism's go-sdk (NewHostFunctionWithStack): a name, a namespace
// (the import module, ExtismUserModule unless SetNamespace changes it),
// a wasm signature and a callback that sees the plugin's kernel memory
// (CurrentPlugin).
type ExtismHostFunction struct {
	// Name is the function's import name.
	Name string
	// Namespace is its import module (default ExtismUserModule).
	Namespace string
	// Params and Returns are its wasm signature (PTR for a kernel offset).
	Params, Returns []ValueType
	// Callback runs a call of it.
	Callback ExtismHostFunctionCallback
}

// ExtismHostFunctionCallback runs one call of an ExtismHostFunction on the
// guest's goroutine, as Extism's go-sdk's HostFunctionStackCallback does:
// stack holds the parameters on entry and must hold the results on
// return. It reports a failure by panicking (with an error or any value):
// the guest traps (KindTrapped, Outcome.Err wraps a *HostError), never the
// host. ctx is the call's hard context: a callback that may block must
// return once it is done (HostFuncImpl says what happens to one that does
// not).
type ExtismHostFunctionCallback func(ctx context.Context, p *CurrentPlugin, stack []uint64)

// NewHostFunctionWithStack returns a host function named name in
// ExtismUserModule, as Extism's go-sdk's function of that name does.
func NewHostFunctionWithStack(name string, callback ExtismHostFunctionCallback, params, returns []ValueType) ExtismHostFunction {
	return ExtismHostFunction{Name: name, Namespace: ExtismUserModule, Params: params, Returns: returns, Callback: callback}
}

// SetNamespace sets the function's import module.
func (f *ExtismHostFunction) SetNamespace(namespace string) { f.Namespace = namespace }

// ExtismHostModules returns the host modules that give funcs to plugins,
// one per namespace, in the order they first appear: append them to
// Config.HostModules, and grant each module in the manifests of the
// plugins that may call them (Manifest.HostModules). A function with no
// namespace is in ExtismUserModule; one with no callback is reported by
// Config.Validate (New) like any host function without a Func.
func ExtismHostModules(funcs ...ExtismHostFunction) []HostModuleDef {
	var mods []HostModuleDef
	index := map[string]int{}
	for _, f := range funcs {
		ns := f.Namespace
		if ns == "" {
			ns = ExtismUserModule
		}
		i, ok := index[ns]
		if !ok {
			i = len(mods)
			index[ns] = i
			mods = append(mods, HostModuleDef{Name: ns})
		}
		hf := HostFunc{Name: f.Name, Params: f.Params, Results: f.Returns}
		if cb, name := f.Callback, ns+"."+f.Name; cb != nil {
			hf.Func = func(ctx context.Context, c Call, stack []uint64) error {
				p := &CurrentPlugin{call: c, fn: name}
				if c.st != nil {
					p.k = c.st.ext
				}
				cb(ctx, p, stack)
				return nil
			}
		}
		mods[i].Funcs = append(mods[i].Funcs, hf)
	}
	return mods
}

// ErrNotExtism is returned by CurrentPlugin's methods for the kernel
// memory when the guest is not an Extism plugin being called (a plugin of
// Stint's convention, or a task, that imports the function): it has no
// kernel memory.
var ErrNotExtism = errors.New("not an Extism plugin call: no kernel memory")

// CurrentPlugin is what an ExtismHostFunction's callback sees of the
// plugin it serves, as in Extism's go-sdk: its kernel memory, addressed
// by the offsets the plugin passes (PTR values), every offset and length
// checked (an error, never a panic). Only valid during the callback.
type CurrentPlugin struct {
	call Call
	k    *extismkernel.Kernel // nil: not an Extism plugin call
	fn   string               // module.name, for errors
}

// Call is the call's identity and linear memory (Call.Plugin,
// Call.Config, Call.Read, ...), as a HostFuncImpl sees them.
func (p *CurrentPlugin) Call() Call { return p.call }

func (p *CurrentPlugin) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{p.fn}, args...)...)
}

func (p *CurrentPlugin) linear() uint64 { return uint64(memSize(p.call.mod)) }

// Alloc returns the offset of a new zeroed block of n bytes of kernel
// memory (0 for n == 0). Past the plugin's memory limit it returns an
// error and the call ends as memory_limit once the guest is back.
func (p *CurrentPlugin) Alloc(n uint64) (uint64, error) {
	if p.k == nil {
		return 0, ErrNotExtism
	}
	off, err := p.k.TryAlloc(n, p.linear())
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

// Memory is the plugin's kernel memory, read and written at offsets as
// with Extism's go-sdk's Memory (whose methods of the same names it has):
// only the memory in use, [8, Size()), can be reached.
func (p *CurrentPlugin) Memory() ExtismMemory { return ExtismMemory{k: p.k} }

// ExtismMemory is an Extism plugin's kernel memory as a host function sees
// it (CurrentPlugin.Memory): every access inside the memory in use, else
// false. Slices from Read are the memory itself: valid until the callback
// returns or allocates.
type ExtismMemory struct{ k *extismkernel.Kernel }

// Size is the end of the kernel memory in use.
func (m ExtismMemory) Size() uint32 {
	if m.k == nil {
		return 0
	}
	return uint32(min(m.k.Size(), 1<<32-1))
}

func (m ExtismMemory) span(offset, n uint32) ([]byte, bool) {
	if m.k == nil {
		return nil, false
	}
	return m.k.Mem(uint64(offset), uint64(n))
}

// Read returns the n bytes at offset.
func (m ExtismMemory) Read(offset, n uint32) ([]byte, bool) { return m.span(offset, n) }

// Write copies v to offset.
func (m ExtismMemory) Write(offset uint32, v []byte) bool {
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
func (m ExtismMemory) ReadUint32Le(offset uint32) (uint32, bool) {
	b, ok := m.span(offset, 4)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b), true
}

// WriteUint32Le writes v little-endian at offset.
func (m ExtismMemory) WriteUint32Le(offset, v uint32) bool {
	b, ok := m.span(offset, 4)
	if ok {
		binary.LittleEndian.PutUint32(b, v)
	}
	return ok
}

// ReadUint64Le reads a little-endian uint64 at offset.
func (m ExtismMemory) ReadUint64Le(offset uint32) (uint64, bool) {
	b, ok := m.span(offset, 8)
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b), true
}

// WriteUint64Le writes v little-endian at offset.
func (m ExtismMemory) WriteUint64Le(offset uint32, v uint64) bool {
	b, ok := m.span(offset, 8)
	if ok {
		binary.LittleEndian.PutUint64(b, v)
	}
	return ok
}
