//go:build !(linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64))

package memory

import "github.com/tetratelabs/wazero/experimental"

// imageBacking is never made on this platform: instances copy the image
// into a pooled buffer (memory.go).
type imageBacking struct{}

// newBacking returns nil: copy the image.
func newBacking(*Image) (*imageBacking, error) { return nil, nil }

// mapImage returns nil: copy the image.
func mapImage(*Image) (*imageBacking, error) { return nil, nil }

func (*imageBacking) allocateMapped(*Budget, uint64) experimental.LinearMemory { return nil }
func (*imageBacking) drain()                                                   {}
func (*imageBacking) close()                                                   {}
func (*imageBacking) readAt([]byte, uint64) bool                               { return false }
func (*imageBacking) mappings() int64                                          { return 0 }
func (*imageBacking) fileName() string                                         { return "" }
