package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/stint-run/stint/internal/termsafe"
)

// batchInput is one input file of a batch and what became of it.
type batchInput struct {
	// name is the file's base name: its output is --out/name, the guest's
	// stderr of a failure --out/name.stderr.
	name string
	// dir is the folder it is in, open: the file is opened relative to it
	// (inputDir.openInput).
	dir *inputDir
	// path is the file's absolute path (part of the idempotency key).
	path string
	size int64
	// perm is the mode its output and NAME.stderr are created with (less
	// the umask): the input's permission bits & 0666, from the fstat of
	// the file the batch read; 0600 until it was read.
	perm fs.FileMode
	// sha is the sha256 of its content when it was submitted: its
	// attempts check the file against it (inputFor) unless data holds it.
	sha [32]byte
	// data is the content the batch read and hashed, held until its task
	// ends so that its attempts need not read the file again (nil when
	// the batch's budget for held inputs, Config.HoldBytes, was spent).
	data []byte
	// id is its task (0 until submitted).
	id int64
}

// outputPerm is the mode of the output of an input whose mode is mode:
// never wider than the input's, never executable or special.
func outputPerm(mode fs.FileMode) fs.FileMode { return mode.Perm() & 0o666 }

// listInputs resolves --in: a directory (its regular files, not those
// whose name starts with a dot, not its subdirectories) or a glob pattern
// (the regular files it matches). It returns the inputs and the folders
// they are in, open (the caller closes them). Links are listed as inputs
// only when they lead to a regular file, and such an input fails when it
// is opened (inputdir.go: a batch follows no links). Every error is a
// usage error: nothing has been done yet.
func listInputs(in string) ([]*batchInput, []*inputDir, error) {
	if in == "" {
		return nil, nil, inputErrorf("--in is required: a folder of input files, or a glob like 'data/*.txt'")
	}
	// An entry of a folder that may be an input.
	type entry struct {
		dir  *inputDir
		name string
		path string // as listed: filepath.Join(--in, name), or as the glob matched it
	}
	var ents []entry
	var dirs []*inputDir
	closeDirs := func() {
		for _, d := range dirs {
			_ = d.Close()
		}
	}
	fi, err := os.Stat(in)
	switch {
	case err == nil && fi.IsDir():
		d, err := openInputDir(in)
		if err != nil {
			return nil, nil, inputErrorf("--in %s: %v", termsafe.String(in), err)
		}
		dirs = append(dirs, d)
		des, err := d.f.ReadDir(-1)
		if err != nil {
			closeDirs()
			return nil, nil, inputErrorf("--in %s: %v", termsafe.String(in), err)
		}
		for _, e := range des {
			if !strings.HasPrefix(e.Name(), ".") {
				ents = append(ents, entry{dir: d, name: e.Name(), path: filepath.Join(in, e.Name())})
			}
		}
	case err == nil:
		d, err := openInputDir(filepath.Dir(in))
		if err != nil {
			return nil, nil, inputErrorf("--in %s: %v", termsafe.String(in), err)
		}
		dirs = append(dirs, d)
		ents = append(ents, entry{dir: d, name: filepath.Base(in), path: in})
	case errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(in, "*?["):
		paths, err := filepath.Glob(in)
		if err != nil {
			return nil, nil, inputErrorf("--in %q: %v", in, err)
		}
		if len(paths) == 0 {
			break
		}
		// The glob's fixed part is the folder the user named; every folder
		// it matched below that is opened without following a link.
		root := globRoot(in)
		rd, err := openInputDir(root)
		if err != nil {
			return nil, nil, inputErrorf("--in %q: %v", in, err)
		}
		dirs = append(dirs, rd)
		subs := map[string]*inputDir{".": rd}
		var subDir func(rel string) *inputDir
		subDir = func(rel string) *inputDir {
			if d, ok := subs[rel]; ok {
				return d
			}
			parent := subDir(filepath.Dir(rel))
			d, err := parent.sub(filepath.Base(rel))
			if err != nil {
				d = failedDir(filepath.Join(root, rel), err)
			} else {
				dirs = append(dirs, d)
			}
			subs[rel] = d
			return d
		}
		for _, p := range paths {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				closeDirs()
				return nil, nil, inputErrorf("--in %q: %s is not below %s", in, termsafe.String(p), termsafe.String(root))
			}
			ents = append(ents, entry{dir: subDir(rel), name: filepath.Base(p), path: p})
		}
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, inputErrorf("--in %s: no such folder", termsafe.String(in))
	default:
		return nil, nil, inputErrorf("--in %s: %v", termsafe.String(in), err)
	}
	// What filepath.Abs does, with the working directory read once
	// (filepath.Abs reads it again for every path: a third of a listing).
	wd, err := os.Getwd()
	if err != nil {
		closeDirs()
		return nil, nil, inputErrorf("--in %s: %v", termsafe.String(in), err)
	}
	var inputs []*batchInput
	seen := make(map[string]string, len(ents))
	for _, e := range ents {
		var size int64
		if e.dir.err == nil {
			mode, sz, err := e.dir.lstat(e.name, false)
			if err != nil {
				closeDirs()
				return nil, nil, inputErrorf("input %v", termsafe.String(err.Error()))
			}
			size = sz
			if mode&fs.ModeSymlink != 0 {
				// Listed (so that it fails, saying why) only if it leads to
				// a file: a link to a folder is skipped as a folder is.
				if to, _, err := e.dir.lstat(e.name, true); err != nil || !to.IsRegular() {
					continue
				}
				size = 0 // never read
			} else if !mode.IsRegular() {
				continue
			}
		}
		p := e.path
		abs := p
		if !filepath.IsAbs(p) {
			abs = filepath.Join(wd, p)
		}
		name := e.name
		if strings.HasSuffix(name, stderrSuffix) {
			closeDirs()
			return nil, nil, collisionErrorf("input %s: names ending in %s are kept for the guest's stderr of failed inputs; rename it", termsafe.String(p), stderrSuffix)
		}
		if other, dup := seen[name]; dup {
			closeDirs()
			return nil, nil, collisionErrorf("inputs %s and %s have the same name, so the same output file; give them different names or run two batches", termsafe.String(other), termsafe.String(p))
		}
		seen[name] = p
		inputs = append(inputs, &batchInput{name: name, dir: e.dir, path: abs, size: size, perm: 0o600})
	}
	if len(inputs) == 0 {
		closeDirs()
		return nil, nil, inputErrorf("--in %s: no input files (want regular files; names starting with a dot are skipped)", termsafe.String(in))
	}
	sort.Slice(inputs, func(i, j int) bool { return inputs[i].name < inputs[j].name })
	return inputs, dirs, nil
}

// globRoot is the fixed part of the glob pattern: its leading folders
// up to the first with a wildcard ("." if the first has one).
func globRoot(pattern string) string {
	dir := filepath.Dir(pattern)
	for hasGlobMeta(dir) {
		next := filepath.Dir(dir)
		if next == dir {
			break
		}
		dir = next
	}
	if hasGlobMeta(dir) {
		return "."
	}
	return dir
}

// hasGlobMeta reports whether path holds a character filepath.Match
// treats specially (the backslash escapes, but not on Windows).
func hasGlobMeta(path string) bool {
	magic := `*?[\`
	if runtime.GOOS == "windows" {
		magic = `*?[`
	}
	return strings.ContainsAny(path, magic)
}

// checkInputSizes refuses inputs over limits.max_input before any work.
func checkInputSizes(inputs []*batchInput, max int64) error {
	if max <= 0 {
		return nil
	}
	var big []string
	for _, in := range inputs {
		if in.size > max {
			big = append(big, fmt.Sprintf("%s (%s)", termsafe.String(in.path), formatSize(in.size)))
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
	return inputErrorf("%d inputs are larger than limits.max_input (%s): %s%s; raise limits.max_input (--limits-max-input) or leave them out",
		n, formatSize(max), strings.Join(big, ", "), more)
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
