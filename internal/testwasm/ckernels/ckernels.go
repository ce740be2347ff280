// Package ckernels builds small C compute kernels into WASI commands for the
// stop-check benchmarks (internal/bench LoopCost and sandbox
// BenchmarkInterruptInterleaved): real compiled code, as clang emits it,
// next to the hand-written WAT shapes.
//
// The C sources are in src/ beside this file and embedded; nothing built is
// committed. [Build] compiles a kernel with
//
//	clang-14 -O2 --target=wasm32-wasi --sysroot=/usr -fuse-ld=lld -nodefaultlibs -lc
//
// (Debian's wasi-libc puts its headers in /usr/include/wasm32-wasi and its
// libraries in /usr/lib/wasm32-wasi, which --sysroot=/usr finds;
// -nodefaultlibs because compiler-rt's wasm32 builtins are a separate
// package the kernels do not need) into a cache directory, under a name that
// hashes the sources, the flags and clang's version, so a build happens once
// per change. Without clang-14, wasm-ld or wasi-libc, Build returns an error
// wrapping [ErrUnavailable]: callers skip the kernels, they do not fail.
//
// Each kernel reads an optional decimal size from stdin (empty stdin: its
// default, about 5-50 ms of compute on wazero's compiler) and prints one
// checksum line that depends on all of its work.
package ckernels

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

//go:embed src/*.c src/*.h
var src embed.FS

// Kernel is one C kernel: its name (src/<Name>.c) and what it exercises.
type Kernel struct {
	Name  string
	Label string
}

// Kernels are the kernels, in the order the benchmarks report them.
// src/chase.c is built by name too but is not one of them: the snapshot
// tests' guest (a long pointer chase through MiB of memory, a line a
// round), which knows nothing of Stint. Nor is src/walk.c: the mount
// tests' guest, which walks a mounted tree as real tools do (scandir,
// fstatat relative to a directory's descriptor, paths with "..") and
// prints a line for each thing it finds. Nor is src/readloop.c: the snapshot tests'
// guest with a read-only mount, which reads the same files round after
// round, each open only while it reads it.
var Kernels = []Kernel{
	{"sha256", "SHA-256 of 1 MiB (integer rotates and adds, no calls)"},
	{"qsort", "libc qsort of 50,000 ints, a comparator per comparison (call_indirect)"},
	{"matmul", "160x160 double matrix multiply (dense float loops)"},
	{"saxpy", "saxpy over 65,536 floats, 128 times, and a dot product (dense float loops)"},
	{"interp", "switch-dispatch bytecode interpreter, 9M bytecodes (br_table)"},
	{"sieve", "sieve of Eratosthenes below 4,000,000 (strided stores)"},
	{"fib", "recursive fib(32): 3.5M calls (clang -O2 makes one of the two a loop)"},
}

// ErrUnavailable is wrapped by the errors of [Build] and [Available] when
// clang-14, its wasm linker or wasi-libc is not installed.
var ErrUnavailable = errors.New("ckernels: clang-14, lld-14 and wasi-libc are needed (apt-get install clang-14 lld-14 wasi-libc)")

// Flags are clang's flags besides the source and the output.
var Flags = []string{"-O2", "--target=wasm32-wasi", "--sysroot=/usr", "-fuse-ld=lld", "-nodefaultlibs", "-lc"}

// Available returns nil if Build can build kernels here, else an error
// wrapping ErrUnavailable that says what is missing.
func Available() error {
	_, err := toolchain()
	return err
}

var (
	tcOnce    sync.Once
	tcVersion []byte
	tcErr     error
)

// toolchain checks for clang-14, wasm-ld and wasi-libc once and returns
// clang's version output.
func toolchain() ([]byte, error) {
	tcOnce.Do(func() {
		clang, err := exec.LookPath("clang-14")
		if err != nil {
			tcErr = fmt.Errorf("%w: clang-14 is not on PATH", ErrUnavailable)
			return
		}
		if _, err := exec.LookPath("wasm-ld-14"); err != nil {
			if _, err := exec.LookPath("wasm-ld"); err != nil {
				tcErr = fmt.Errorf("%w: wasm-ld-14 (lld-14) is not on PATH", ErrUnavailable)
				return
			}
		}
		for _, f := range []string{"/usr/lib/wasm32-wasi/libc.a", "/usr/include/wasm32-wasi/stdio.h"} {
			if _, err := os.Stat(f); err != nil {
				tcErr = fmt.Errorf("%w: no %s (wasi-libc)", ErrUnavailable, f)
				return
			}
		}
		out, err := exec.Command(clang, "--version").Output()
		if err != nil {
			tcErr = fmt.Errorf("%w: clang-14 --version: %v", ErrUnavailable, err)
			return
		}
		tcVersion = out
	})
	return tcVersion, tcErr
}

// Build returns the WASI command built from src/<name>.c, compiling it
// into cacheDir/ckernels unless an up-to-date build is there already. It is
// safe to call from several processes at once.
func Build(cacheDir, name string) ([]byte, error) {
	version, err := toolchain()
	if err != nil {
		return nil, err
	}
	source, err := src.ReadFile("src/" + name + ".c")
	if err != nil {
		return nil, fmt.Errorf("ckernels: no kernel %q", name)
	}
	common, err := src.ReadFile("src/common.h")
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	for _, part := range [][]byte{source, common, version, []byte(fmt.Sprint(Flags))} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	dir := filepath.Join(cacheDir, "ckernels")
	out := filepath.Join(dir, name+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".wasm")
	if b, err := os.ReadFile(out); err == nil {
		return b, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for file, b := range map[string][]byte{name + ".c": source, "common.h": common} {
		if err := os.WriteFile(filepath.Join(tmp, file), b, 0o644); err != nil {
			return nil, err
		}
	}
	wasm := filepath.Join(tmp, name+".wasm")
	args := append(append([]string{}, Flags...), "-o", wasm, filepath.Join(tmp, name+".c"))
	cmd := exec.Command("clang-14", args...)
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ckernels: building %s: %v\n%s", name, err, msg.Bytes())
	}
	b, err := os.ReadFile(wasm)
	if err != nil {
		return nil, err
	}
	if err := os.Rename(wasm, out); err != nil { // atomic: a concurrent build writes the same bytes
		return nil, err
	}
	return b, nil
}
