package sandbox

import (
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/rewrite"
)

// memImages turns memory images on (the default); benchmarks turn them off
// to compare with data merging alone.
var memImages = func() *atomic.Bool { b := new(atomic.Bool); b.Store(true); return b }()

// imageBounds bounds a memory image as data merging bounds its own
// (datasegments.go).
var imageBounds = memory.ImageBounds{Max: mergeMaxImage, Sparsity: mergeMaxSparsity, Slack: mergeImageAllowed}

// What splitData did with a module's data segments.
const (
	dataKept   = iota // left as they were
	dataImaged        // moved into a memory image
	dataMerged        // merged (rewrite.MergeDataSegments)
)

// splitData returns the module to compile and its memory image: the
// module without the data segments the image holds, or, when no image
// applies (or images is false: memImages), the module with its segments
// merged (rewrite.MergeDataSegments) and no image; and what it did.
func splitData(wasm []byte, minPages uint32, images bool) ([]byte, *memory.Image, int) {
	if stripped, img, ok := memory.BuildImage(wasm, minPages, imageBounds); ok && images {
		return stripped, img, dataImaged
	}
	if merged, ok := rewrite.MergeDataSegments(wasm, minPages); ok {
		return merged, nil, dataMerged
	}
	return wasm, nil, dataKept
}

// backImage gives a compiled module's image its platform backing (a
// memfd to map, on Linux); without one, instances copy the image.
func (r *Runtime) backImage(sha string, img *memory.Image) {
	if img == nil {
		return
	}
	if err := img.Back(sha[:min(len(sha), 16)]); err != nil {
		r.log.Warn("memory image: cannot map it; instances copy it instead", zap.String("sha256", sha), zap.Error(err))
	}
}

// drainImages unmaps the pooled memories of every module in the registry
// (Runtime.Close); memories in use are unmapped when their run ends.
func (r *Runtime) drainImages() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.modules {
		if e.settled && e.mod != nil {
			e.mod.image.Drain()
		}
	}
}
