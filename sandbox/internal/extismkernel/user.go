package extismkernel

// What the embedder's host functions of extism:host/user use (package
// sandbox/extism's CurrentPlugin): the same checks as the guest's kernel
// calls, with errors instead of traps.

// Mem returns the n bytes at off if they lie in the memory in use
// ([8, top)); false if not. The slice is the arena: valid until the next
// alloc.
func (k *Kernel) Mem(off, n uint64) ([]byte, bool) { return k.at(off, n) }

// Size is the end of the memory in use: offsets below it may be live.
func (k *Kernel) Size() uint64 { return k.top }

// LiveBlock returns the bytes of the live block at off (the arena: valid
// until the next alloc); false if there is none.
func (k *Kernel) LiveBlock(off uint64) ([]byte, bool) {
	blk, ok := k.blocks[off]
	if !ok || blk.free {
		return nil, false
	}
	return k.at(off, blk.used)
}

// TryAlloc is Alloc with the memory limit's trap turned into an error (the
// budget is marked hit all the same: the call ends as memory_limit once
// the guest is back).
func (k *Kernel) TryAlloc(n, linear uint64) (off uint64, err error) {
	defer trapToError(&err)
	return k.Alloc(n, linear), nil
}

// trapToError, deferred by a method that runs outside the guest, turns
// the memory limit's trap (a panic with an *Error) into *err; any other
// panic goes on.
func trapToError(err *error) {
	if p := recover(); p != nil {
		ke, ok := p.(*Error)
		if !ok {
			panic(p)
		}
		*err = ke
	}
}
