package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// A batch follows no link below In (--in): the folder --in names (or the
// fixed part of a glob, before its first wildcard) is opened once, as the
// user named it, and every input, and every folder a glob matched below
// it, is opened relative to that descriptor with O_NOFOLLOW. A link that
// could lead out of --in (to /etc/shadow, planted in an upload folder) is
// never read, nor is one that stays inside it: the check is the open
// itself, so nothing can swap a file for a link between a check and the
// read. Inputs are opened with O_NONBLOCK and must be regular files after
// fstat, so a FIFO or a device put in an input's place fails that input
// at once instead of hanging the batch.

// errInputLink: an input (or a folder of a glob below --in's fixed part)
// is a symbolic link, which runner batch does not follow.
var errInputLink = errors.New("a symbolic link: runner batch follows no links in --in (one could lead out of it); give the file itself")

// errInputNotRegular: an input is not a regular file when it is opened
// (a FIFO, a device, a socket or a folder put in its place since it was
// listed).
var errInputNotRegular = errors.New("not a regular file (a FIFO, device, socket or folder put in its place since it was listed): runner batch reads regular files only")

// inputDir is a folder of a batch's inputs, open for the batch's life:
// its inputs are opened relative to it (openInput), and its device and
// inode are what --out is compared with (sameDir).
type inputDir struct {
	f    *os.File
	fd   int
	path string
	fi   fs.FileInfo
	// err, when set, is why the folder could not be opened (a folder of a
	// glob that is a link): each of its inputs fails with it.
	err error
	// ents are its entries once read (entries).
	ents    []os.DirEntry
	entsErr error
	read    bool
}

// openInputDir opens the folder path (following links in path: it is the
// folder the user named).
func openInputDir(path string) (*inputDir, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return newInputDir(f, path)
}

// newInputDir makes an inputDir of the open folder f, checking that it is
// one.
func newInputDir(f *os.File, path string) (*inputDir, error) {
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		_ = f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a folder")}
	}
	return &inputDir{f: f, fd: descriptor(f), path: path, fi: fi}, nil
}

// failedDir is an inputDir that could not be opened: its inputs fail with
// err.
func failedDir(path string, err error) *inputDir { return &inputDir{fd: -1, path: path, err: err} }

// join is the path of the entry name of the folder.
func (d *inputDir) join(name string) string { return filepath.Join(d.path, name) }

// sameDir reports whether the folder is the one fi describes (device and
// inode).
func (d *inputDir) sameDir(fi fs.FileInfo) bool { return d.fi != nil && os.SameFile(d.fi, fi) }

// Close closes the folder.
func (d *inputDir) Close() error {
	if d.f == nil {
		return nil
	}
	return d.f.Close()
}
