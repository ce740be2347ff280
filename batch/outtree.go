package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// StateDir is the batch's own folder in Out: inputs never produce a name
// starting with a dot (their walk skips dot-names) and an output name may
// not start with it, so nothing of the batch's can collide with an output.
const StateDir = ".stint-batch"

// StderrDir is where a failed input's stderr goes, below Out:
// Out/.stint-batch/stderr/NAME, NAME being the output's path below Out.
const StderrDir = StateDir + string(filepath.Separator) + "stderr"

// errOutLink: a folder on the way to an output below Out (--out) is a
// symbolic link, which runner batch does not follow.
var errOutLink = errors.New("a symbolic link: runner batch follows no links in --out (one could lead out of it); remove it")

// outTree is a folder of outputs and its subfolders, each an outDir
// opened when first written to. Every folder is opened from Out's own
// descriptor (root, opened by the batch before any work), one component
// at a time, without following a link (openDirAt): a link planted in Out,
// or swapped for one of its folders, is never written through; the
// outputs whose folder it is fail, saying so.
type outTree struct {
	root *outDir // Out, open
	// dir is the tree's path (root's, joined with prefix); prefix its
	// path below root ("" for Out itself, StderrDir for the stderr files).
	dir, prefix string
	mode        string
	mu          sync.Mutex
	subs        map[string]*outDir // by path below dir ("." the tree's own folder)
	// missing: folders found missing when a file in them was to be
	// removed (a file written since is not one to remove).
	missing map[string]bool
}

// newOutTree is the tree of the folder prefix below root (Out, open;
// prefix "" for root itself).
func newOutTree(root *outDir, prefix, mode string) *outTree {
	t := &outTree{root: root, dir: filepath.Join(root.dir, prefix), prefix: prefix, mode: mode,
		subs: map[string]*outDir{}, missing: map[string]bool{}}
	if prefix == "" {
		t.subs["."] = root
	}
	return t
}

// sub is the folder rel below the tree, opened (and with create, made
// and its making made durable) if it was not; nil without create if it
// is not there (or is a link).
func (t *outTree) sub(rel string, create bool) (*outDir, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d, ok := t.subs[rel]; ok {
		return d, nil
	}
	if !create && t.missing[rel] {
		return nil, nil
	}
	dir, path := t.root.f, t.root.dir
	var held *os.File // dir when it is not root's: closed once its child is open
	defer func() {
		if held != nil {
			_ = held.Close()
		}
	}()
	for _, name := range strings.Split(filepath.Join(t.prefix, rel), string(filepath.Separator)) {
		if name == "." || name == "" {
			continue
		}
		f, made, err := openDirAt(dir, path, name, create)
		if err == nil && made {
			err = dir.Sync() // the new folder's name lasts
		}
		if held != nil {
			_ = held.Close()
			held = nil
		}
		if err != nil {
			if f != nil {
				_ = f.Close()
			}
			if !create && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, errOutLink) || errors.Is(err, syscall.ENOTDIR)) {
				t.missing[rel] = true
				return nil, nil
			}
			return nil, err
		}
		dir, path, held = f, filepath.Join(path, name), f
	}
	if held == nil { // the root itself
		return t.root, nil
	}
	f := held
	held = nil // outDirOf has it now
	d, _, err := outDirOf(f, path, t.mode, nil)
	if err != nil {
		return nil, err
	}
	t.subs[rel] = d
	return d, nil
}

// writeFiles writes files (their names paths below the tree) as
// outDir.writeFiles does, each folder's as one group.
func (t *outTree) writeFiles(files []outputFile) []error {
	errs := make([]error, len(files))
	type group struct {
		idx   []int
		files []outputFile
	}
	var order []string
	groups := map[string]*group{}
	for i, f := range files {
		dir := filepath.Dir(f.name)
		g := groups[dir]
		if g == nil {
			g = &group{}
			groups[dir] = g
			order = append(order, dir)
		}
		f.name = filepath.Base(f.name)
		g.idx, g.files = append(g.idx, i), append(g.files, f)
	}
	for _, dir := range order {
		g := groups[dir]
		d, err := t.sub(dir, true)
		if err != nil {
			for _, i := range g.idx {
				errs[i] = fmt.Errorf("making the folder of %s: %w", files[i].name, err)
			}
			continue
		}
		for k, err := range d.writeFiles(g.files) {
			errs[g.idx[k]] = err
		}
	}
	return errs
}

// remove deletes the file rel below the tree, durably, if it was there
// when its folder was opened.
func (t *outTree) remove(rel string) error {
	d, err := t.sub(filepath.Dir(rel), false)
	if d == nil || err != nil {
		return err
	}
	return d.remove(filepath.Base(rel))
}

// size is the size of the regular file rel, if it is there (its folder
// opened as sub opens it, the file itself not followed if a link).
func (t *outTree) size(rel string) (int64, bool) {
	d, err := t.sub(filepath.Dir(rel), false)
	if d == nil || err != nil {
		return 0, false
	}
	mode, size, err := (&inputDir{fd: d.fd, path: d.dir}).lstat(filepath.Base(rel), false)
	if err != nil || !mode.IsRegular() {
		return 0, false
	}
	return size, true
}

// path is the file rel's path.
func (t *outTree) path(rel string) string { return filepath.Join(t.dir, rel) }
