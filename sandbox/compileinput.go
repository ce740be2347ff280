package sandbox

import (
	"bytes"
	"errors"
	"io/fs"

	"go.uber.org/zap"

	"github.com/stint-run/stint/sandbox/internal/memory"
)

// compileInput is a module ready for wazero: validated and rewritten
// (prepareModule), its data segments moved into a memory image or merged
// (dataImage), and the memory minimum it declares.
type compileInput struct {
	wasm     []byte
	image    *memory.Image // nil: no image
	minPages uint32
	// release frees the transient buffer the image's bytes are in (a
	// prepared-module cache load); nil: they are the Go heap's. See done.
	release func()
	// key is its prepared-module cache key, when keyed (Config.CacheDir
	// set): its entries' names go by it (cachenames.go).
	key   [32]byte
	keyed bool
}

// done is called once the image has its backing (Runtime.backImage): an
// image whose bytes are still in a transient buffer (it was not moved
// into a memfd, so instances copy it) gets a copy of its own, and the
// buffer is freed. Safe to call on any path, once.
func (in *compileInput) done() {
	if in.release == nil {
		return
	}
	if in.image != nil && in.image.Data != nil {
		in.image.Data = bytes.Clone(in.image.Data)
	}
	in.release()
	in.release = nil
}

// prepareInput validates and rewrites wasm (prepareModule), then splits
// its data (splitData). The error is a *ModuleError. Its result depends
// on nothing but its arguments: that is what lets the prepared-module
// cache key it by them (preparedKey).
func prepareInput(wasm []byte, lim *ModuleLimits, loopChecks, images, resumable bool) (compileInput, int, error) {
	prep, err := prepareModule(wasm, lim, loopChecks, resumable)
	if err != nil {
		return compileInput{}, dataKept, err
	}
	minPages, err := declaredMemoryMin(prep.Wasm)
	if err != nil {
		return compileInput{}, dataKept, &ModuleError{Kind: KindInvalidModule, Message: err.Error(), Err: err}
	}
	out, img, how := splitData(prep.Wasm, minPages, images)
	return compileInput{wasm: out, image: img, minPages: minPages}, how, nil
}

// prepared returns wasm ready for wazero: from the prepared-module cache
// when it holds it (no validation, no rewrite), else prepared now and
// stored there. A cache entry that cannot be read, or is damaged, costs a
// preparation, never the task. Only modules that pass are cached: a
// refused module is validated again each time.
func (r *Runtime) prepared(src *moduleSource) (compileInput, error) {
	sha := src.sha
	loopChecks, images := r.cfg.Interrupt.loopChecks(), memImages.Load()
	if r.prep == nil {
		wasm, err := src.bytes() // modsource.go: read only now, when needed
		if err != nil {
			return compileInput{}, err
		}
		return r.prepareNow(sha, wasm, loopChecks, images)
	}
	key := preparedKey(sha, &r.cfg.ModuleLimits, loopChecks, images, r.cfg.Resumable)
	in, err := r.prep.load(key)
	switch {
	case err == nil:
		r.prep.hits.Add(1)
		// Prepared by another runtime, whose host modules may differ.
		if err := r.checkImports(in.wasm); err != nil {
			if in.release != nil {
				in.release() // the load's buffer: nothing of it is kept
			}
			return compileInput{}, err
		}
		r.log.Debug("prepared module loaded from the cache", zap.String("sha256", sha), zap.Int("bytes", len(in.wasm)))
		in.key, in.keyed = key, true
		return in, nil
	case errors.Is(err, errPreparedDamaged):
		r.prep.damaged.Add(1)
		r.log.Warn("a prepared-module cache entry is damaged; preparing the module again (the task is not affected)",
			zap.String("sha256", sha), zap.String("cache_dir", r.cfg.CacheDir), zap.Error(err))
	case !errors.Is(err, fs.ErrNotExist):
		r.log.Warn("the prepared-module cache cannot be read; preparing the module again (the task is not affected)",
			zap.String("sha256", sha), zap.String("cache_dir", r.cfg.CacheDir), zap.Error(err))
	}
	wasm, err := src.bytes()
	if err != nil {
		return compileInput{}, err
	}
	in, err = r.prepareNow(sha, wasm, loopChecks, images)
	if err != nil {
		return in, err
	}
	if err := r.prep.store(key, in); err != nil {
		r.log.Warn("the prepared module cannot be stored in the cache (the task is not affected)",
			zap.String("sha256", sha), zap.String("cache_dir", r.cfg.CacheDir), zap.Error(err))
	}
	in.key, in.keyed = key, true
	return in, nil
}

// prepareNow is prepareInput, with dataImage's logging. Refused before
// that: first a module that uses a feature Stint does not run or imports
// what it lacks (checkImports), then one whose own bytes already compile
// over Config.CompileMemory (precheckCompileMemory).
func (r *Runtime) prepareNow(sha string, wasm []byte, loopChecks, images bool) (compileInput, error) {
	if err := r.checkImports(wasm); err != nil { // features and imports: the final answer first
		return compileInput{}, err
	}
	if err := r.precheckCompileMemory(sha, wasm); err != nil {
		return compileInput{}, err
	}
	in, how, err := prepareInput(wasm, &r.cfg.ModuleLimits, loopChecks, images, r.cfg.Resumable)
	if err != nil {
		return in, err
	}
	switch how {
	case dataImaged:
		r.log.Debug("memory image built", zap.String("sha256", sha), zap.Uint64("image_bytes", in.image.Size),
			zap.Int("bytes_after", len(in.wasm)))
	case dataMerged:
		r.log.Debug("data segments merged", zap.String("sha256", sha), zap.Int("bytes_after", len(in.wasm)))
	}
	return in, nil
}
