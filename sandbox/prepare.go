package sandbox

import (
	"errors"
	"fmt"

	"github.com/stint-run/stint/sandbox/internal/resume"
	"github.com/stint-run/stint/sandbox/internal/rewrite"
	"github.com/stint-run/stint/sandbox/internal/verify"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// Module preparation is sandbox/internal/rewrite's (validation against the
// module limits and the rewrite: its package documentation and
// docs/rewrite.md), binary decoding sandbox/internal/wasmbin's. This file
// is the sandbox's side: prepareModule, which turns the rewrite's errors
// into *ModuleError, and the names the rest of the sandbox (memimage.go,
// interrupt.go, work.go) uses for what those packages export.

// declaredMemoryMin is wasmbin.DeclaredMemoryMin.
func declaredMemoryMin(wasm []byte) (uint32, error) { return wasmbin.DeclaredMemoryMin(wasm) }

// dataSegment is one active segment: its offset in memory 0 and its bytes.
type dataSegment struct {
	offset uint32
	data   []byte
}

// The limits of data merging, which memory images keep to as well
// (rewrite.MergeDataSegments).
const (
	mergeMaxImage     = rewrite.MergeMaxImage
	mergeMaxSparsity  = rewrite.MergeMaxSparsity
	mergeImageAllowed = rewrite.MergeImageAllowed
)

// The names the rewrite gives the host functions its checks call
// (interrupt.go, callstack.go), and what it adds to a module.
const (
	interruptModule = rewrite.InterruptModule
	interruptFunc   = rewrite.InterruptFunc
	callStackFunc   = rewrite.CallStackFunc
	interruptBudget = rewrite.InterruptBudget
	addedGlobals    = rewrite.AddedGlobals
)

// blockingImports are the host calls a resumable guest can be suspended
// in (runState.unwindsInHostCall): poll_oneoff's sleeps, and fd_read's
// reads of a stdin that blocks (a reader given as Spec.Stdin; an
// in-memory input never blocks, nor do files under mounts).
var blockingImports = []resume.Import{
	{Module: "wasi_snapshot_preview1", Name: "poll_oneoff"},
	{Module: "wasi_snapshot_preview1", Name: "fd_read"},
}

// prepareModule validates wasm against lim and rewrites it
// (rewrite.Prepare). The error is a *ModuleError, with the rewrite's
// text.
//
// With resumable, a module that passes is made resumable first
// (sandbox/internal/resume) and that is rewritten and verified; a module
// the transform does not support, or whose resumable form the rewrite or
// the verifier refuses, is prepared as it is (its runs cannot suspend;
// Module.resumable says which).
func prepareModule(wasm []byte, lim *ModuleLimits, loopChecks, resumable bool) (*rewrite.Prepared, error) {
	l := rewrite.Limits(*lim)
	if resume.ImportsHost(wasm) {
		return nil, &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf("module imports %s, which only Stint's own rewrite may", resume.ImportModule)}
	}
	prep, err := rewrite.Prepare(wasm, &l, loopChecks)
	if err != nil {
		return nil, moduleError(err)
	}
	params := verify.Params{Budget: rewrite.InterruptBudget, Loops: loopChecks}
	if resumable {
		if res, err := resume.Transform(wasm, blockingImports...); err == nil {
			if rprep, err := rewrite.Prepare(res.Wasm, &l, loopChecks); err == nil && verify.Module(rprep.Wasm, params) == nil {
				return rprep, nil
			}
		}
	}
	// Nothing runs unproved: the verifier, apart from the rewrite, proves
	// the stop bound on the bytes wazero will compile (docs/rewrite.md).
	if err := verify.Module(prep.Wasm, params); err != nil {
		return nil, &ModuleError{Kind: KindInvalidModule, Message: "refused: Stint's verifier cannot prove that this module, as rewritten, " +
			"stops within its bound (docs/security.md; please report it with the module): " + err.Error()}
	}
	return prep, nil
}

// moduleError is the *ModuleError of a rewrite.Error.
func moduleError(err error) error {
	var re *rewrite.Error
	if !errors.As(err, &re) {
		return err
	}
	kind := KindInvalidModule
	if re.BadImport {
		kind = KindBadImport
	}
	return &ModuleError{Kind: kind, Message: re.Message}
}
