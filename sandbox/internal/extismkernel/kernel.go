package extismkernel

import (
	"encoding/binary"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/memory"
)

// Module is the import module of Extism's plugin ABI, which names the
// kernel's functions in its errors (package sandbox's ExtismModule).
const Module = "extism:host/env"

// Bounds of an Extism plugin's kernel state (docs/plugins.md, "Extism
// plugins"; docs/security.md).
const (
	// MaxVarBytes caps the bytes an Extism plugin's vars hold, per
	// instance: every name and value, plus extismVarOverhead per var
	// (package sandbox's MaxExtismVarBytes).
	MaxVarBytes = 1 << 20
	// maxExtismErrorBytes caps the error message kept from error_set.
	maxExtismErrorBytes = 64 << 10
	// extismBlockOverhead is what each memory block is charged beyond its
	// bytes: the host's bookkeeping of it, so that many tiny blocks cannot
	// make the host hold more than the memory limit says.
	extismBlockOverhead = 64
	// extismVarOverhead is what each var is charged beyond its bytes.
	extismVarOverhead = 64
	// extismBase is the first offset a block can have: offset 0 is "no
	// block" in the ABI.
	extismBase = 8
	// extismFreeScan bounds how many freed blocks alloc looks at for one
	// it can reuse, so that a guest cannot make each alloc cost more.
	extismFreeScan = 64
	// extismKeepArena is the largest arena kept across calls.
	extismKeepArena = 1 << 20
)

// extismBlock is one memory block of the kernel.
type extismBlock struct {
	size uint64 // bytes reserved (a multiple of 8)
	used uint64 // bytes asked for (what length returns)
	free bool
}

// Kernel is the host side of the Extism kernel for one plugin instance:
// its memory blocks (a flat arena addressed by offsets, with the blocks'
// bookkeeping kept outside it, where the guest cannot forge it), the
// call's input, output and error, and the instance's vars. The
// blocks, input, output and error live for one call (reset at its start);
// the vars for the instance. Every offset and length the guest passes is
// checked: a bad one panics with an *Error, which the guest traps with
// (the methods are called from host functions, where wazero turns a panic
// into a trap). Its memory (bytes in use plus extismBlockOverhead a block)
// counts against the instance's memory limit together with its linear
// memory (budget, never nil); its vars are capped at MaxVarBytes. Only the
// instance's goroutine touches it (a call at a time).
type Kernel struct {
	// MaxOutput is the call's output limit in bytes (OutputSet), set
	// before each call.
	MaxOutput int64
	// MaxVars caps the bytes the vars hold (names, values and the
	// overhead of each); 0 or over MaxVarBytes: MaxVarBytes.
	MaxVars int

	mem    []byte                  // the arena; offsets index it, [extismBase, top) is in use
	top    uint64                  // the bump position
	blocks map[uint64]*extismBlock // by offset
	freed  []uint64                // offsets of freed blocks below top, latest last
	budget *memory.Budget          // the instance's memory budget (charged with charge)
	charge uint64                  // what the kernel holds against the budget

	inputOff, inputLen   uint64
	outputOff, outputLen uint64
	output               []byte // a copy of the output, made by output_set
	hasOutput            bool
	errorOff             uint64
	errMsg               string

	vars     map[string][]byte
	varBytes int
}

// Error is a misuse of the kernel by the guest: a bad offset or length,
// an unknown block. The guest traps with it.
type Error struct {
	// Func is the function of Module the guest misused.
	Func string
	// Msg says how.
	Msg string
}

// Error names the function and says what was wrong.
func (e *Error) Error() string { return Module + "." + e.Func + ": " + e.Msg }

// New returns the kernel of an instance whose memory budget is budget.
func New(budget *memory.Budget) *Kernel {
	return &Kernel{budget: budget, top: extismBase, blocks: map[uint64]*extismBlock{}}
}

// Reset (also the guest's reset) frees every block and forgets the input,
// output and error: what a call starts with. The vars stay.
func (k *Kernel) Reset() {
	k.top = extismBase
	if cap(k.mem) > extismKeepArena { // a big arena is not kept idle across calls
		k.mem = nil
	}
	clear(k.blocks)
	k.freed = k.freed[:0]
	k.inputOff, k.inputLen = 0, 0
	k.outputOff, k.outputLen, k.output, k.hasOutput = 0, 0, nil, false
	k.errorOff, k.errMsg = 0, ""
	k.setCharge(0)
}

func (k *Kernel) setCharge(c uint64) {
	k.budget.AddExtra(c - k.charge) // wraps to a subtraction when c < charge
	k.charge = c
}

// Alloc is alloc: it returns the offset of a new zeroed block of n bytes
// (0 for n == 0). Past the memory limit it marks the budget hit and traps
// (the call ends as memory_limit). linear is the guest's linear memory
// size now.
func (k *Kernel) Alloc(n, linear uint64) uint64 {
	if n == 0 {
		return 0
	}
	limit := k.limit()
	if n > limit {
		k.overLimit(n, linear)
	}
	size := (n + 7) &^ 7
	// A freed block that fits, without wasting more than half of it.
	for i := len(k.freed) - 1; i >= 0 && i >= len(k.freed)-extismFreeScan; i-- {
		off := k.freed[i]
		b := k.blocks[off]
		if b.size >= size && b.size/2 <= size {
			k.freed = append(k.freed[:i], k.freed[i+1:]...)
			b.free, b.used = false, n
			clear(k.mem[off : off+b.size])
			return off
		}
	}
	need := k.charge + size + extismBlockOverhead // no overflow: each term is at most the limit
	if linear > limit || need > limit-linear {
		k.overLimit(n, linear)
	}
	off := k.top
	end := off + size
	if end > uint64(len(k.mem)) {
		if end > uint64(cap(k.mem)) {
			grown := make([]byte, end, max(end, min(2*uint64(cap(k.mem)), limit), 4096))
			copy(grown, k.mem)
			k.mem = grown
		}
		k.mem = k.mem[:end]
	}
	clear(k.mem[off:end])
	k.top = end
	k.blocks[off] = &extismBlock{size: size, used: n}
	k.setCharge(need)
	return off
}

// limit is the instance's memory limit in bytes.
func (k *Kernel) limit() uint64 { return k.budget.Limit }

func (k *Kernel) overLimit(n, linear uint64) {
	k.budget.SetHit()
	panic(&Error{Func: "alloc", Msg: fmt.Sprintf(
		"a block of %d bytes would take the plugin over its memory limit of %d bytes (Extism memory %d bytes, linear memory %d bytes)",
		n, k.limit(), k.charge, linear)})
}

// Free is free: it frees the block at off; 0, an unknown offset and a
// block already freed are ignored (as Extism's kernel does).
func (k *Kernel) Free(off uint64) {
	b, ok := k.blocks[off]
	if !ok || b.free {
		return
	}
	if off+b.size == k.top { // the last block: the bump position goes back
		delete(k.blocks, off)
		k.top = off
		k.setCharge(k.charge - b.size - extismBlockOverhead)
		return
	}
	b.free = true
	k.freed = append(k.freed, off)
}

// Length is length (and length_unsafe): the length of the live block at
// off; 0 if there is none.
func (k *Kernel) Length(off uint64) uint64 {
	if b, ok := k.blocks[off]; ok && !b.free {
		return b.used
	}
	return 0
}

// Block returns the bytes of the live block at off (the arena itself:
// valid until the next alloc), or traps naming fn.
func (k *Kernel) Block(fn string, off uint64) []byte {
	b, ok := k.LiveBlock(off)
	if !ok {
		panic(&Error{Func: fn, Msg: fmt.Sprintf("offset %d is not a live memory block", off)})
	}
	return b
}

// at returns the n bytes at off if they lie in the memory in use
// ([extismBase, top)) and in the arena; false if not, for any off and n.
// Empty spans are an empty slice: no index of a nil or short arena.
func (k *Kernel) at(off, n uint64) ([]byte, bool) {
	if off < extismBase || off > k.top || n > k.top-off || off+n > uint64(len(k.mem)) {
		if n == 0 && off >= extismBase && off <= k.top {
			return []byte{}, true // [top, top) of an arena not grown yet
		}
		return nil, false
	}
	return k.mem[off : off+n : off+n], true
}

// span returns the n bytes at off, which must lie in the memory in use,
// or traps naming fn.
func (k *Kernel) span(fn string, off, n uint64) []byte {
	b, ok := k.at(off, n)
	if !ok {
		panic(&Error{Func: fn, Msg: fmt.Sprintf("offset %d length %d is outside the plugin's Extism memory [%d, %d)",
			off, n, extismBase, k.top)})
	}
	return b
}

// LoadU8 is load_u8: the byte at off.
func (k *Kernel) LoadU8(off uint64) uint8 { return k.span("load_u8", off, 1)[0] }

// LoadU64 is load_u64: the little-endian uint64 at off.
func (k *Kernel) LoadU64(off uint64) uint64 {
	return binary.LittleEndian.Uint64(k.span("load_u64", off, 8))
}

// StoreU8 is store_u8: v becomes the byte at off.
func (k *Kernel) StoreU8(off uint64, v uint8) { k.span("store_u8", off, 1)[0] = v }

// StoreU64 is store_u64: v becomes the little-endian uint64 at off.
func (k *Kernel) StoreU64(off, v uint64) {
	binary.LittleEndian.PutUint64(k.span("store_u64", off, 8), v)
}

// InputSpan returns the n bytes at off in the input, or traps naming fn.
func (k *Kernel) InputSpan(fn string, off, n uint64) []byte {
	if off > k.inputLen || n > k.inputLen-off {
		panic(&Error{Func: fn, Msg: fmt.Sprintf("offset %d length %d is outside the input (%d bytes)", off, n, k.inputLen)})
	}
	if n == 0 {
		return []byte{}
	}
	// The input was in the memory in use when it was set; a free since may
	// have given that room back.
	return k.span(fn, k.inputOff+off, n)
}

// setInput copies input into a new block and makes it the call's input.
func (k *Kernel) setInput(input []byte, linear uint64) {
	off := k.Alloc(uint64(len(input)), linear)
	copy(k.mem[off:], input)
	k.inputOff, k.inputLen = off, uint64(len(input))
}

// InputSet is the guest's input_set: the input becomes the n bytes at off.
func (k *Kernel) InputSet(off, n uint64) {
	if n > 0 {
		k.span("input_set", off, n)
	}
	k.inputOff, k.inputLen = off, n
}

// OutputSet is output_set: the output becomes a copy of the n bytes at
// off (the guest may free them at once). Over MaxOutput it does nothing
// and returns false: the caller ends the call as over its output limit.
func (k *Kernel) OutputSet(off, n uint64) bool {
	if int64(n) > k.MaxOutput || int64(n) < 0 {
		return false
	}
	var b []byte
	if n > 0 {
		b = k.span("output_set", off, n)
	}
	k.outputOff, k.outputLen, k.hasOutput = off, n, true
	k.output = append(make([]byte, 0, n), b...)
	return true
}

// ErrorSet is error_set: the call's error becomes the string in the block
// at off (kept up to maxExtismErrorBytes); 0 clears it.
func (k *Kernel) ErrorSet(off uint64) {
	if off == 0 {
		k.errorOff, k.errMsg = 0, ""
		return
	}
	b := k.Block("error_set", off)
	if len(b) > maxExtismErrorBytes {
		b = b[:maxExtismErrorBytes]
	}
	k.errorOff, k.errMsg = off, string(b)
}

// WriteBlock copies data into a new block and returns its offset (0 for
// no data).
func (k *Kernel) WriteBlock(data []byte, linear uint64) uint64 {
	off := k.Alloc(uint64(len(data)), linear)
	copy(k.mem[off:], data)
	return off
}

// VarGet returns the value of the var named by the block at nameOff (for
// var_get).
func (k *Kernel) VarGet(nameOff uint64) ([]byte, bool) {
	name := k.Block("var_get", nameOff)
	v, ok := k.vars[string(name)]
	return v, ok
}

// VarSet is var_set: it sets (valOff 0: removes) the var named by the
// block at nameOff to the block at valOff, and frees both blocks. Over
// MaxVarBytes it traps.
func (k *Kernel) VarSet(nameOff, valOff uint64) {
	name := string(k.Block("var_set", nameOff))
	var val []byte
	if valOff != 0 {
		val = k.Block("var_set", valOff)
	}
	old, had := k.vars[name]
	size := k.varBytes
	if had {
		size -= len(name) + len(old) + extismVarOverhead
	}
	if valOff == 0 {
		delete(k.vars, name)
		k.varBytes = size
	} else {
		size += len(name) + len(val) + extismVarOverhead
		if limit := k.maxVars(); size > limit {
			panic(&Error{Func: "var_set", Msg: fmt.Sprintf("var %q of %d bytes would make the plugin's vars hold %d bytes, over their limit of %d",
				truncate(name, 64), len(val), size, limit)})
		}
		if k.vars == nil {
			k.vars = map[string][]byte{}
		}
		k.vars[name] = append([]byte(nil), val...)
		k.varBytes = size
	}
	k.Free(valOff)
	k.Free(nameOff)
}

// maxVars is the vars' cap: MaxVars, within MaxVarBytes.
func (k *Kernel) maxVars() int {
	if k.MaxVars <= 0 || k.MaxVars > MaxVarBytes {
		return MaxVarBytes
	}
	return k.MaxVars
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// SetInput copies input into a new block and makes it the call's input,
// with the memory limit's trap turned into an error (it runs outside the
// guest, where nothing recovers a panic). linear is the guest's linear
// memory size now.
func (k *Kernel) SetInput(input []byte, linear uint64) (err error) {
	defer trapToError(&err)
	k.setInput(input, linear)
	return nil
}

// InputOffset is input_offset: where the call's input is.
func (k *Kernel) InputOffset() uint64 { return k.inputOff }

// InputLength is input_length: the call's input's length.
func (k *Kernel) InputLength() uint64 { return k.inputLen }

// OutputOffset is output_offset: where the output output_set named is.
func (k *Kernel) OutputOffset() uint64 { return k.outputOff }

// OutputLength is output_length: the output's length.
func (k *Kernel) OutputLength() uint64 { return k.outputLen }

// ErrorOffset is error_get: the block error_set named; 0 for none.
func (k *Kernel) ErrorOffset() uint64 { return k.errorOff }

// ErrorMessage is the call's error, as error_set left it ("" for none).
func (k *Kernel) ErrorMessage() string { return k.errMsg }

// MemoryBytes is memory_bytes: the bytes of kernel memory in use.
func (k *Kernel) MemoryBytes() uint64 { return k.top - extismBase }

// TakeOutput returns the call's output (empty, not nil, when the guest
// set none) and forgets it: the caller owns it now. Once a call.
func (k *Kernel) TakeOutput() []byte {
	output := k.output
	if !k.hasOutput {
		output = []byte{}
	}
	k.output = nil
	return output
}
