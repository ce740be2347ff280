package sandbox

import (
	"encoding/binary"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/memory"
)

// Bounds of an Extism plugin's kernel state (docs/plugins.md, "Extism
// plugins"; docs/security.md).
const (
	// MaxExtismVarBytes caps the bytes an Extism plugin's vars hold, per
	// instance: every name and value, plus extismVarOverhead per var.
	MaxExtismVarBytes = 1 << 20
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

// extismKernel is the host side of the Extism kernel for one plugin
// instance: its memory blocks (a flat arena addressed by offsets, with the
// blocks' bookkeeping kept outside it, where the guest cannot forge it),
// the call's input, output and error, and the instance's vars. The
// blocks, input, output and error live for one call (reset at its start);
// the vars for the instance. Every offset and length the guest passes is
// checked: a bad one is a *kernelError the guest traps with. Its memory
// (bytes in use plus extismBlockOverhead a block) counts against the
// instance's memory limit together with its linear memory (budget, never
// nil); its
// vars are capped at MaxExtismVarBytes. Only the instance's goroutine
// touches it (a call at a time).
type extismKernel struct {
	mem    []byte                  // the arena; offsets index it, [extismBase, top) is in use
	top    uint64                  // the bump position
	blocks map[uint64]*extismBlock // by offset
	freed  []uint64                // offsets of freed blocks below top, latest last
	budget *memory.Budget          // the instance's memory budget (charged with charged)
	charge uint64                  // what the kernel holds against the budget

	inputOff, inputLen   uint64
	outputOff, outputLen uint64
	output               []byte // a copy of the output, made by output_set
	hasOutput            bool
	maxOutput            int64
	errorOff             uint64
	errMsg               string

	vars     map[string][]byte
	varBytes int
}

// kernelError is a misuse of the kernel by the guest: a bad offset or
// length, an unknown block. The guest traps with it.
type kernelError struct {
	fn  string
	msg string
}

func (e *kernelError) Error() string { return ExtismModule + "." + e.fn + ": " + e.msg }

func newExtismKernel(budget *memory.Budget) *extismKernel {
	return &extismKernel{budget: budget, top: extismBase, blocks: map[uint64]*extismBlock{}}
}

// reset frees every block and forgets the input, output and error: what a
// call starts with. The vars stay.
func (k *extismKernel) reset() {
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

func (k *extismKernel) setCharge(c uint64) {
	k.budget.AddExtra(c - k.charge) // wraps to a subtraction when c < charge
	k.charge = c
}

// alloc returns the offset of a new zeroed block of n bytes (0 for n ==
// 0). Past the memory limit it marks the budget hit and traps (the call
// ends as memory_limit). linear is the guest's linear memory size now.
func (k *extismKernel) alloc(n, linear uint64) uint64 {
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
func (k *extismKernel) limit() uint64 { return k.budget.Limit }

func (k *extismKernel) overLimit(n, linear uint64) {
	k.budget.SetHit()
	panic(&kernelError{fn: "alloc", msg: fmt.Sprintf(
		"a block of %d bytes would take the plugin over its memory limit of %d bytes (Extism memory %d bytes, linear memory %d bytes)",
		n, k.limit(), k.charge, linear)})
}

// free frees the block at off; 0, an unknown offset and a block already
// freed are ignored (as Extism's kernel does).
func (k *extismKernel) free(off uint64) {
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

// length is the length of the live block at off; 0 if there is none.
func (k *extismKernel) length(off uint64) uint64 {
	if b, ok := k.blocks[off]; ok && !b.free {
		return b.used
	}
	return 0
}

// block returns the bytes of the live block at off (the arena itself:
// valid until the next alloc), or traps naming fn.
func (k *extismKernel) block(fn string, off uint64) []byte {
	b, ok := k.blocks[off]
	if !ok || b.free {
		panic(&kernelError{fn: fn, msg: fmt.Sprintf("offset %d is not a live memory block", off)})
	}
	return k.mem[off : off+b.used]
}

// span returns the n bytes at off, which must lie in the memory in use,
// or traps naming fn.
func (k *extismKernel) span(fn string, off, n uint64) []byte {
	if off < extismBase || off > k.top || n > k.top-off {
		panic(&kernelError{fn: fn, msg: fmt.Sprintf("offset %d length %d is outside the plugin's Extism memory [%d, %d)",
			off, n, extismBase, k.top)})
	}
	return k.mem[off : off+n]
}

func (k *extismKernel) loadU8(off uint64) uint8 { return k.span("load_u8", off, 1)[0] }

func (k *extismKernel) loadU64(off uint64) uint64 {
	return binary.LittleEndian.Uint64(k.span("load_u64", off, 8))
}

func (k *extismKernel) storeU8(off uint64, v uint8) { k.span("store_u8", off, 1)[0] = v }

func (k *extismKernel) storeU64(off, v uint64) {
	binary.LittleEndian.PutUint64(k.span("store_u64", off, 8), v)
}

// inputSpan returns the n bytes at off in the input, or traps naming fn.
func (k *extismKernel) inputSpan(fn string, off, n uint64) []byte {
	if off > k.inputLen || n > k.inputLen-off {
		panic(&kernelError{fn: fn, msg: fmt.Sprintf("offset %d length %d is outside the input (%d bytes)", off, n, k.inputLen)})
	}
	return k.mem[k.inputOff+off : k.inputOff+off+n]
}

// setInput copies input into a new block and makes it the call's input.
func (k *extismKernel) setInput(input []byte, linear uint64) {
	off := k.alloc(uint64(len(input)), linear)
	copy(k.mem[off:], input)
	k.inputOff, k.inputLen = off, uint64(len(input))
}

// inputSet is the guest's input_set: the input becomes the n bytes at off.
func (k *extismKernel) inputSet(off, n uint64) {
	if n > 0 {
		k.span("input_set", off, n)
	}
	k.inputOff, k.inputLen = off, n
}

// outputSet is output_set: the output becomes a copy of the n bytes at
// off (the guest may free them at once). Over maxOutput, the call ends as
// output_limit.
func (k *extismKernel) outputSet(off, n uint64) {
	if int64(n) > k.maxOutput || int64(n) < 0 {
		panic(&callError{kind: KindOutputLimit, msg: fmt.Sprintf("output of %d bytes is over its limit of %d bytes", n, k.maxOutput)})
	}
	var b []byte
	if n > 0 {
		b = k.span("output_set", off, n)
	}
	k.outputOff, k.outputLen, k.hasOutput = off, n, true
	k.output = append(make([]byte, 0, n), b...)
}

// errorSet is error_set: the call's error becomes the string in the block
// at off (kept up to maxExtismErrorBytes); 0 clears it.
func (k *extismKernel) errorSet(off uint64) {
	if off == 0 {
		k.errorOff, k.errMsg = 0, ""
		return
	}
	b := k.block("error_set", off)
	if len(b) > maxExtismErrorBytes {
		b = b[:maxExtismErrorBytes]
	}
	k.errorOff, k.errMsg = off, string(b)
}

// writeBlock copies data into a new block and returns its offset (0 for
// no data).
func (k *extismKernel) writeBlock(data []byte, linear uint64) uint64 {
	off := k.alloc(uint64(len(data)), linear)
	copy(k.mem[off:], data)
	return off
}

// varGet returns the value of the var named by the block at nameOff.
func (k *extismKernel) varGet(nameOff uint64) ([]byte, bool) {
	name := k.block("var_get", nameOff)
	v, ok := k.vars[string(name)]
	return v, ok
}

// varSet sets (valOff 0: removes) the var named by the block at nameOff to
// the block at valOff, and frees both blocks. Over MaxExtismVarBytes it
// traps.
func (k *extismKernel) varSet(nameOff, valOff uint64) {
	name := string(k.block("var_set", nameOff))
	var val []byte
	if valOff != 0 {
		val = k.block("var_set", valOff)
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
		if size > MaxExtismVarBytes {
			panic(&kernelError{fn: "var_set", msg: fmt.Sprintf("var %q of %d bytes would make the plugin's vars hold %d bytes, over their limit of %d",
				truncate(name, 64), len(val), size, MaxExtismVarBytes)})
		}
		if k.vars == nil {
			k.vars = map[string][]byte{}
		}
		k.vars[name] = append([]byte(nil), val...)
		k.varBytes = size
	}
	k.free(valOff)
	k.free(nameOff)
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
