package pool

import (
	"context"

	"github.com/stint-run/stint/sandbox"
)

// Executor compiles and runs modules: what the pool needs of the sandbox.
// *sandbox.Runtime is one.
type Executor interface {
	// Lookup returns a module already compiled from the bytes with this
	// hex sha256.
	Lookup(sha256 string) (*sandbox.Module, bool)
	// Compile compiles wasm (once per hash).
	Compile(ctx context.Context, wasm []byte) (*sandbox.Module, error)
	// Run runs one attempt of a compiled module.
	Run(ctx context.Context, mod *sandbox.Module, spec sandbox.Spec) (*sandbox.Outcome, error)
	// Config is the executor's configuration (the pool reads its default
	// limits).
	Config() sandbox.Config
}

var _ Executor = (*sandbox.Runtime)(nil)

// ending is how an attempt left the pool; it picks the counter it adds to
// (Stats).
type ending string

// The endings of an attempt.
const (
	// endFinished: the attempt ended on its own (any outcome), recorded.
	endFinished ending = "finished"
	// endInterrupted: the pool's RequestStop stopped it, recorded.
	endInterrupted ending = "interrupted"
	// endForced: the pool's ForceStop ended it, recorded.
	endForced ending = "forced"
	// endLost: its result was dropped (lease taken over, or unrecorded).
	endLost ending = "lost"
	// endReleased: claimed ahead, never started, given back to the queue.
	endReleased ending = "released"
)
