package fsutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// Options tune WriteFile and WriteFileIn. The zero value is the durable
// atomic write.
type Options struct {
	// TempName is the temporary file's name in the destination's
	// directory, created exclusively (an existing file of that name is an
	// error). Empty: "." + the destination's name + ".tmp" + 16 random hex
	// digits. A writer that cleans up after a crash names its own.
	TempName string
	// SyncDir, when set, is called after the rename in place of fsyncing
	// the directory: for writers that share one directory fsync among many
	// renames (cmd/runner's batch output).
	SyncDir func() error
	// NoDirSync skips the directory's fsync: the write is still atomic
	// (the old file or the new one), but a crash may lose the rename. For a
	// cache, which can lose an entry.
	NoDirSync bool
}

// WriteFile replaces the file at path with data, durably and atomically
// (see the package doc): a temporary file in the same directory, created
// with mode perm less the umask (as os.WriteFile), written, fsynced,
// closed, renamed over path, and the directory fsynced. On an error the
// temporary file is removed and path is as it was, unless the error is the
// directory's fsync, after the rename.
func WriteFile(path string, data []byte, perm fs.FileMode, o Options) error {
	return write(pathDir(filepath.Dir(path)), filepath.Base(path), data, perm, o)
}

// WriteFileIn is WriteFile for the file name in the directory root, every
// step through root (os.Root): a symlink put in its place cannot redirect
// the write out of the directory.
func WriteFileIn(root *os.Root, name string, data []byte, perm fs.FileMode, o Options) error {
	return write(rootDir{root}, name, data, perm, o)
}

// dirOps is a directory written in: by path or through an os.Root.
type dirOps interface {
	create(name string, perm fs.FileMode) (*os.File, error)
	rename(from, to string) error
	remove(name string)
	open() (*os.File, error)
}

func write(d dirOps, name string, data []byte, perm fs.FileMode, o Options) error {
	tmp := o.TempName
	if tmp == "" {
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		tmp = "." + name + ".tmp" + hex.EncodeToString(rnd[:])
	}
	f, err := d.create(tmp, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.rename(tmp, name)
	}
	if err != nil {
		d.remove(tmp)
		return err
	}
	switch {
	case o.SyncDir != nil:
		return o.SyncDir()
	case o.NoDirSync:
		return nil
	}
	return syncDir(d)
}

// syncDir fsyncs the directory, so that the rename survives a crash. A
// system or file system that cannot fsync a directory (Windows; EINVAL,
// ENOTSUP) is not an error: there the rename is as durable as it gets.
func syncDir(d dirOps) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := d.open()
	if err != nil {
		return err
	}
	err = fsyncDir(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}

// fsyncDir fsyncs an open directory; a test counts the calls.
var fsyncDir = (*os.File).Sync

type pathDir string

func (d pathDir) create(name string, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(filepath.Join(string(d), name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

func (d pathDir) rename(from, to string) error {
	return os.Rename(filepath.Join(string(d), from), filepath.Join(string(d), to))
}

func (d pathDir) remove(name string) { _ = os.Remove(filepath.Join(string(d), name)) }

func (d pathDir) open() (*os.File, error) { return os.Open(string(d)) }

type rootDir struct{ r *os.Root }

func (d rootDir) create(name string, perm fs.FileMode) (*os.File, error) {
	return d.r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
}

func (d rootDir) rename(from, to string) error { return d.r.Rename(from, to) }

func (d rootDir) remove(name string) { _ = d.r.Remove(name) }

func (d rootDir) open() (*os.File, error) { return d.r.Open(".") }
