package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// Bare is wazero used directly, the way a careful embedder would: one
// runtime with WASI, each module compiled once, one fresh instance per
// task. It is the baseline Stint's per-task cost is compared with.
type Bare struct {
	rt    wazero.Runtime
	cache wazero.CompilationCache
}

// NewBare builds the runtime, with WASI and a host module "bench" whose one
// function, nop, does nothing. closeOnDone sets WithCloseOnContextDone
// (what Stint always sets); cacheDir, when not "", is wazero's on-disk
// compilation cache.
func NewBare(ctx context.Context, closeOnDone bool, cacheDir string) (*Bare, error) {
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(closeOnDone)
	b := &Bare{}
	if cacheDir != "" {
		c, err := wazero.NewCompilationCacheWithDir(cacheDir)
		if err != nil {
			return nil, err
		}
		b.cache = c
		rc = rc.WithCompilationCache(c)
	}
	b.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, b.rt); err != nil {
		return nil, errors.Join(err, b.Close(ctx))
	}
	// bench.nop, a host function that does nothing, for testdata/loops.wat.
	_, err := b.rt.NewHostModuleBuilder("bench").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(context.Context, api.Module, []uint64) {}), nil, nil).
		Export("nop").Instantiate(ctx)
	if err != nil {
		return nil, errors.Join(err, b.Close(ctx))
	}
	return b, nil
}

// Compile compiles wasm once.
func (b *Bare) Compile(ctx context.Context, wasm []byte) (wazero.CompiledModule, error) {
	return b.rt.CompileModule(ctx, wasm)
}

// Instantiate makes an instance that runs nothing on its own (no start
// functions), for calling exports directly.
func (b *Bare) Instantiate(ctx context.Context, cm wazero.CompiledModule) (api.Module, error) {
	return b.rt.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions())
}

// Run is one task: instantiate with a fresh ModuleConfig (stdin from
// input, stdout and stderr into buffers), call _start, close. Exit code 0
// is success.
func (b *Bare) Run(ctx context.Context, cm wazero.CompiledModule, input []byte) ([]byte, error) {
	return b.run(ctx, cm, input, false)
}

// RunCryptoRand is Run with crypto/rand as the guest's random source, as
// Stint sets it. wazero's default is a deterministic source that seeds a
// new math/rand generator for every instance, which costs about as much
// as the rest of a no-op task.
func (b *Bare) RunCryptoRand(ctx context.Context, cm wazero.CompiledModule, input []byte) ([]byte, error) {
	return b.run(ctx, cm, input, true)
}

func (b *Bare) run(ctx context.Context, cm wazero.CompiledModule, input []byte, cryptoRand bool) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions().
		WithStdin(bytes.NewReader(input)).
		WithStdout(&stdout).
		WithStderr(&stderr)
	if cryptoRand {
		cfg = cfg.WithRandSource(rand.Reader)
	}
	inst, err := b.rt.InstantiateModule(ctx, cm, cfg)
	if err != nil {
		return nil, err
	}
	_, err = inst.ExportedFunction("_start").Call(ctx)
	cerr := inst.Close(ctx)
	var exit *sys.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 0 {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w (stderr: %q)", err, stderr.Bytes())
	}
	return stdout.Bytes(), cerr
}

// Close closes the runtime and its cache.
func (b *Bare) Close(ctx context.Context) error {
	err := b.rt.Close(ctx)
	if b.cache != nil {
		err = errors.Join(err, b.cache.Close(ctx))
	}
	return err
}
