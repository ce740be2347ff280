// Command stopcost measures what wasmtime's own ways to stop a guest cost
// on the programs Stint's stop checks are measured on: a second
// implementation to set the checks' cost against (docs/design/stop-checks.md).
// Each program (the corpus's Lua, SQLite shell and zstd, and the C
// kernels of internal/testwasm/ckernels) runs in wasmtime-go three ways,
// in turn, -rounds times: with no interruption ("none"), with epoch
// interruption (a check at each loop header and function entry against a
// deadline another thread moves: the only way to stop a spinning guest
// from another thread in wasmtime) and with fuel (a count of the
// instructions run, checked against a budget: a deterministic limit, as
// Stint's work units are). It prints, per program, the median thread CPU
// time with none and the median per-round ratio of each other mode to it;
// the outputs of the three must agree.
//
//	cd bench/peers && go run ./stopcost [-rounds 7] [-corpus ../../../shared/corpus]
//
// The C kernels need clang-14 and wasi-libc (`make test` installs them);
// without them only the corpus is run.
package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/stint-run/stint/internal/testwasm/ckernels"
)

// program is one guest run: its module, stdin and arguments.
type program struct {
	name  string
	wasm  []byte
	stdin []byte
	args  []string
}

// modes are the ways a program runs: none first, the base of the ratios.
var modes = []string{"none", "epoch", "fuel"}

func main() {
	rounds := flag.Int("rounds", 7, "rounds; each runs every mode once, in turn")
	corpus := flag.String("corpus", "../../../shared/corpus", "the corpus (lua.wasm, sqlite3.wasm, zstd.wasm and their inputs)")
	flag.Parse()
	if err := run(*rounds, *corpus); err != nil {
		fmt.Fprintln(os.Stderr, "stopcost:", err)
		os.Exit(1)
	}
}

func run(rounds int, corpus string) error {
	progs, err := programs(corpus)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "stopcost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	engines := map[string]*wasmtime.Engine{}
	for _, m := range modes {
		cfg := wasmtime.NewConfig()
		cfg.SetEpochInterruption(m == "epoch")
		cfg.SetConsumeFuel(m == "fuel")
		engines[m] = wasmtime.NewEngineWithConfig(cfg)
	}
	runtime.LockOSThread() // threadCPU: this thread's, where wasmtime runs the guest
	fmt.Println("| program | none | epoch / none | fuel / none |")
	fmt.Println("| --- | ---: | ---: | ---: |")
	logSum := map[string]float64{}
	for _, p := range progs {
		mods := map[string]*wasmtime.Module{}
		for _, m := range modes {
			if mods[m], err = wasmtime.NewModule(engines[m], p.wasm); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
		}
		stdin := filepath.Join(dir, "stdin")
		if err := os.WriteFile(stdin, p.stdin, 0o600); err != nil {
			return err
		}
		var base []float64
		ratios := map[string][]float64{}
		for r := range rounds {
			took, outs := map[string]float64{}, map[string]string{}
			for i := range modes {
				m := modes[(i+r)%len(modes)]
				if took[m], outs[m], err = runOnce(engines[m], mods[m], m, p, stdin, filepath.Join(dir, "stdout")); err != nil {
					return fmt.Errorf("%s, %s: %w", p.name, m, err)
				}
			}
			for _, m := range modes[1:] {
				if outs[m] != outs["none"] {
					return fmt.Errorf("%s: %s printed %d bytes, none %d", p.name, m, len(outs[m]), len(outs["none"]))
				}
				ratios[m] = append(ratios[m], took[m]/took["none"])
			}
			base = append(base, took["none"])
		}
		fmt.Printf("| %s | %.2f ms | %.3fx | %.3fx |\n", p.name, median(base), median(ratios["epoch"]), median(ratios["fuel"]))
		for _, m := range modes[1:] {
			logSum[m] += math.Log(median(ratios[m]))
		}
	}
	n := float64(len(progs))
	fmt.Printf("| geometric mean | | %.3fx | %.3fx |\n", math.Exp(logSum["epoch"]/n), math.Exp(logSum["fuel"]/n))
	return nil
}

// programs are the corpus's three and the C kernels (when they build).
func programs(corpus string) ([]program, error) {
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(corpus, name)) }
	var progs []program
	script, err := read("bench.lua")
	if err != nil {
		return nil, fmt.Errorf("the corpus: %w (set -corpus)", err)
	}
	sql, err := read("sqlite-work.sql")
	if err != nil {
		return nil, err
	}
	for _, p := range []struct {
		name, file string
		stdin      []byte
		args       []string
	}{
		{"real-lua", "lua.wasm", script, []string{"lua", "-"}},
		{"real-sqlite", "sqlite3.wasm", sql, []string{"sqlite3", ":memory:"}},
		{"real-zstd", "zstd.wasm", []byte(strings.Repeat(string(script), 40)), []string{"zstd", "-q", "-c", "-3"}},
	} {
		wasm, err := read(p.file)
		if err != nil {
			return nil, err
		}
		progs = append(progs, program{p.name, wasm, p.stdin, p.args})
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	for _, k := range ckernels.Kernels {
		wasm, err := ckernels.Build(filepath.Join(cache, "stint-stopcost"), k.Name)
		if errors.Is(err, ckernels.ErrUnavailable) {
			fmt.Fprintln(os.Stderr, "stopcost: the C kernels are left out:", err)
			break
		}
		if err != nil {
			return nil, err
		}
		progs = append(progs, program{"c-" + k.Name, wasm, nil, []string{k.Name}})
	}
	return progs, nil
}

// runOnce runs p once in mode m and returns the guest's thread CPU time
// in milliseconds and its stdout.
func runOnce(engine *wasmtime.Engine, mod *wasmtime.Module, m string, p program, stdin, stdout string) (float64, string, error) {
	store := wasmtime.NewStore(engine)
	defer store.Close()
	linker := wasmtime.NewLinker(engine)
	if err := linker.DefineWasi(); err != nil {
		return 0, "", err
	}
	wasi := wasmtime.NewWasiConfig()
	wasi.SetArgv(p.args)
	if err := wasi.SetStdinFile(stdin); err != nil {
		return 0, "", err
	}
	if err := wasi.SetStdoutFile(stdout); err != nil {
		return 0, "", err
	}
	store.SetWasi(wasi)
	switch m {
	case "epoch":
		store.SetEpochDeadline(1 << 40) // never reached: only the checks' cost
	case "fuel":
		if err := store.SetFuel(1 << 62); err != nil {
			return 0, "", err
		}
	}
	inst, err := linker.Instantiate(store, mod)
	if err != nil {
		return 0, "", err
	}
	start := threadCPU()
	_, err = inst.GetFunc(store, "_start").Call(store)
	took := threadCPU() - start
	var exit *wasmtime.Error
	if errors.As(err, &exit) {
		if code, ok := exit.ExitStatus(); ok && code == 0 {
			err = nil
		}
	}
	if err != nil {
		return 0, "", err
	}
	out, err := os.ReadFile(stdout)
	return took, string(out), err
}

// threadCPU is this thread's CPU time (user and system), in milliseconds.
func threadCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}
