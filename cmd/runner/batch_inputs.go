package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// batchInput is one input file of a batch and what became of it.
type batchInput struct {
	// name is the file's base name: its output is --out/name, the guest's
	// stderr of a failure --out/name.stderr.
	name string
	// path is the file's absolute path (part of the idempotency key).
	path string
	size int64
	// sha is the sha256 of its content when it was submitted: its
	// attempts check the file against it (inputFor) unless data holds it.
	sha [32]byte
	// data is the content the batch read and hashed, held until its task
	// ends so that its attempts need not read the file again (nil when
	// the batch's budget for held inputs was spent; batchHold).
	data []byte
	// id is its task (0 until submitted).
	id int64
}

// listInputs resolves --in: a directory (its regular files, not those
// whose name starts with a dot, not its subdirectories) or a glob pattern
// (the regular files it matches). Every error is a usage error: nothing
// has been done yet.
func listInputs(in string) ([]*batchInput, error) {
	if in == "" {
		return nil, usageErrorf("--in is required: a folder of input files, or a glob like 'data/*.txt'")
	}
	var paths []string
	fi, err := os.Stat(in)
	switch {
	case err == nil && fi.IsDir():
		ents, err := os.ReadDir(in)
		if err != nil {
			return nil, usageErrorf("--in %s: %v", in, err)
		}
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				paths = append(paths, filepath.Join(in, e.Name()))
			}
		}
	case err == nil:
		paths = []string{in}
	case errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(in, "*?["):
		if paths, err = filepath.Glob(in); err != nil {
			return nil, usageErrorf("--in %q: %v", in, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		return nil, usageErrorf("--in %s: no such folder", in)
	default:
		return nil, usageErrorf("--in %s: %v", in, err)
	}
	// What filepath.Abs does, with the working directory read once
	// (filepath.Abs reads it again for every path: a third of a listing).
	wd, err := os.Getwd()
	if err != nil {
		return nil, usageErrorf("--in %s: %v", in, err)
	}
	var inputs []*batchInput
	seen := make(map[string]string, len(paths))
	for _, p := range paths {
		fi, err := os.Stat(p) // follows symlinks
		if err != nil {
			return nil, usageErrorf("input %s: %v", p, err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		abs := p
		if !filepath.IsAbs(p) {
			abs = filepath.Join(wd, p)
		}
		name := filepath.Base(p)
		if strings.HasSuffix(name, stderrSuffix) {
			return nil, usageErrorf("input %s: names ending in %s are kept for the guest's stderr of failed inputs; rename it", p, stderrSuffix)
		}
		if other, dup := seen[name]; dup {
			return nil, usageErrorf("inputs %s and %s have the same name, so the same output file; give them different names or run two batches", other, p)
		}
		seen[name] = p
		inputs = append(inputs, &batchInput{name: name, path: abs, size: fi.Size()})
	}
	if len(inputs) == 0 {
		return nil, usageErrorf("--in %s: no input files (want regular files; names starting with a dot are skipped)", in)
	}
	sort.Slice(inputs, func(i, j int) bool { return inputs[i].name < inputs[j].name })
	return inputs, nil
}

// checkInputSizes refuses inputs over limits.max_input before any work.
func checkInputSizes(inputs []*batchInput, max int64) error {
	if max <= 0 {
		return nil
	}
	var big []string
	for _, in := range inputs {
		if in.size > max {
			big = append(big, fmt.Sprintf("%s (%s)", in.path, formatSize(in.size)))
		}
	}
	if len(big) == 0 {
		return nil
	}
	n, more := len(big), ""
	if len(big) > 5 {
		more = fmt.Sprintf(" and %d more", len(big)-5)
		big = big[:5]
	}
	return usageErrorf("%d inputs are larger than limits.max_input (%s): %s%s; raise limits.max_input (--limits-max-input) or leave them out",
		n, formatSize(max), strings.Join(big, ", "), more)
}

// batchQueue is the queue of the batch writing to the folder out: one per
// output folder, so a batch's pool runs only its own tasks.
func batchQueue(out string) string {
	sum := sha256.Sum256([]byte(out))
	return "batch-" + hex.EncodeToString(sum[:6])
}

// batchKey is an input's idempotency key: the queue (so the output
// folder), the module's sha256, the input's path and sha256, and what else
// changes the output (args, env). The same command over the same files
// finds the same tasks; a changed file, module or argument is a new task.
func batchKey(queue, module, path string, inputSHA [32]byte, args []string, env map[string]string) string {
	h := sha256.New()
	for _, s := range []string{queue, module, path, hex.EncodeToString(inputSHA[:])} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, a := range args {
		h.Write([]byte("arg\x00" + a + "\x00"))
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Write([]byte("env\x00" + k + "=" + env[k] + "\x00"))
	}
	return "batch:" + hex.EncodeToString(h.Sum(nil))
}
