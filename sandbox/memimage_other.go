//go:build !(linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64))

package sandbox

import "github.com/tetratelabs/wazero/experimental"

// imageBacking is never made on this platform: instances copy the image
// into a pooled buffer (memory.go).
type imageBacking struct{}

// newBacking returns nil: copy the image.
func newBacking(*memImage) (*imageBacking, error) { return nil, nil }

// mapImage returns nil: copy the image.
func mapImage(*memImage) (*imageBacking, error) { return nil, nil }

func (*imageBacking) allocateMapped(*memoryBudget, uint64) experimental.LinearMemory { return nil }
func (*imageBacking) drain()                                                         {}
func (*imageBacking) close()                                                         {}
func (*imageBacking) readAt([]byte, uint64) bool                                     { return false }
