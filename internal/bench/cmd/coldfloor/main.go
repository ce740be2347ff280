// Command coldfloor is the floor of a cold start: a program that does only
// what wazero needs to run a WASI command from its on-disk compilation
// cache, with nothing of Stint (no configuration, logger, rewrite, limits
// or prepared-module cache) and few packages linked. It takes the command
// line scripts/coldbench.py gives a runner,
//
//	coldfloor run MODULE.wasm --input - --data-dir DIR [ignored flags...]
//
// and runs MODULE with stdin and stdout, its wazero cache in
// DIR/coldfloor-cache. With STINT_FLOOR_VERBOSE=1 it prints how long each
// step took to stderr. With STINT_FLOOR_COMPILE_ONLY=1 it stops after
// CompileModule: for a module that could not run here, such as the
// prepared form Stint hands wazero (rewritten to import Stint's stop check,
// its data moved to a memory image), extracted from a prepared-module
// cache entry (docs/design/cold-start.md, "wazero's floor", shows how);
// docs/design/cold-start.md compares it with runner run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

var start = time.Now() // the main package's initialization

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "coldfloor:", err)
	}
	os.Exit(code)
}

func run(args []string) (int, error) {
	if len(args) < 2 || args[0] != "run" {
		return 2, errors.New("usage: coldfloor run MODULE.wasm --data-dir DIR")
	}
	path, dataDir := args[1], ""
	for i, a := range args {
		if a == "--data-dir" && i+1 < len(args) {
			dataDir = args[i+1]
		}
	}
	if dataDir == "" {
		return 2, errors.New("--data-dir is required")
	}
	verbose := os.Getenv("STINT_FLOOR_VERBOSE") == "1"
	ctx := context.Background()
	last := start
	step := func(name string) {
		if verbose {
			now := time.Now()
			fmt.Fprintf(os.Stderr, "%s %.2f ms\n", name, float64(now.Sub(last).Microseconds())/1000)
			last = now
		}
	}
	cache, err := wazero.NewCompilationCacheWithDir(filepath.Join(dataDir, "coldfloor-cache"))
	if err != nil {
		return 1, err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	defer func() { _ = rt.Close(ctx) }()
	step("new_runtime")
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return 1, err
	}
	step("wasi")
	wasm, err := os.ReadFile(path)
	if err != nil {
		return 2, err
	}
	step("read_module")
	cm, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return 1, err
	}
	step("compile_module")
	if os.Getenv("STINT_FLOOR_COMPILE_ONLY") == "1" {
		return 0, nil
	}
	cfg := wazero.NewModuleConfig().WithStdin(os.Stdin).WithStdout(os.Stdout).WithStderr(os.Stderr).
		WithSysWalltime().WithSysNanotime().WithName("")
	mod, err := rt.InstantiateModule(ctx, cm, cfg)
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		step("instantiate_and_run")
		return int(exit.ExitCode()), nil
	}
	if err != nil {
		return 1, err
	}
	_ = mod.Close(ctx)
	step("instantiate_and_run")
	return 0, nil
}
