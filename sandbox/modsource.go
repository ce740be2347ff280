package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// moduleSource is a module's bytes, or the file they are in: a module
// compiled from a file (CompileFile) is hashed as it is streamed, and its
// bytes are read only if they are needed (the prepared-module cache does
// not hold it, or there is no cache). A Go guest is about 2.6 MB: on a
// warm start, not reading it into memory spares the process that much
// fresh memory, and copying it once more spares as much again.
type moduleSource struct {
	sha  string // hex sha256 of the bytes
	size int64
	wasm []byte // the bytes, owned by the compilation; nil: read path
	path string
}

// errSourceChanged is wrapped by the error of a compilation whose module
// file no longer holds the bytes it was hashed from.
var errSourceChanged = errors.New("the module file changed while it was compiled")

// bytes returns the module's bytes, reading its file if need be. Read
// from the file, they must have the sha256 the file was hashed to;
// otherwise the error wraps errSourceChanged.
func (s *moduleSource) bytes() ([]byte, error) {
	if s.wasm != nil || s.path == "" {
		return s.wasm, nil
	}
	b, err := readFileAtMost(s.path, s.size)
	if err != nil {
		return nil, fmt.Errorf("sandbox: reading the module: %w", err)
	}
	if int64(len(b)) != s.size || SHA256(b) != s.sha {
		return nil, fmt.Errorf("sandbox: %s: %w", s.path, errSourceChanged)
	}
	s.wasm = b
	return b, nil
}

// readFileAtMost reads the file at path, or at most max+1 bytes of it
// (the caller compares the length): a file that grew since it was hashed
// is never read whole.
func readFileAtMost(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(io.LimitReader(f, max+1))
}

// hashFile returns the hex sha256 and size of the file at path, read
// through a small buffer. A file larger than max bytes (by its size, or
// by what reading it gives: a device or a file that grows) is not read
// further: the error is max_module_size's *ModuleError.
func hashFile(path string, max int64) (sha string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > max {
		return "", 0, overLimit(fmt.Sprintf("module of %d bytes", fi.Size()), "max_module_size", uint64(max))
	}
	h := sha256.New()
	buf := make([]byte, 64<<10)
	size, err = io.CopyBuffer(h, io.LimitReader(f, max+1), buf) // a LimitedReader: no WriterTo/ReaderFrom, the small buffer is used
	if err != nil {
		return "", 0, err
	}
	if size > max {
		return "", 0, overLimit(fmt.Sprintf("module of %d bytes or more", size), "max_module_size", uint64(max))
	}
	return hex.EncodeToString(h.Sum(nil)), size, nil
}

// CompileFile is Compile for the module in the file at path; an error
// reading it is an *fs.PathError (docs/sandbox.md, "Compiling").
func (r *Runtime) CompileFile(ctx context.Context, path string) (*Module, error) {
	sha, size, err := hashFile(path, int64(r.cfg.ModuleLimits.MaxModuleSize))
	if err != nil {
		return nil, err
	}
	return r.compileSource(ctx, moduleSource{sha: sha, size: size, path: path})
}

// clone makes the source the compilation's own: the caller of Compile may
// reuse its bytes once Compile returns.
func (s moduleSource) clone() moduleSource {
	if s.wasm != nil {
		s.wasm = bytes.Clone(s.wasm)
	}
	return s
}
