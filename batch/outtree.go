package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// StateDir is the batch's own folder in Out: inputs never produce a name
// starting with a dot (their walk skips dot-names) and an output name may
// not start with it, so nothing of the batch's can collide with an output.
const StateDir = ".stint-batch"

// StderrDir is where a failed input's stderr goes, below Out:
// Out/.stint-batch/stderr/NAME, NAME being the output's path below Out.
const StderrDir = StateDir + string(filepath.Separator) + "stderr"

// outTree is a folder of outputs and its subfolders, each an outDir
// opened when first written to (the root's is opened by the batch before
// any work).
type outTree struct {
	dir  string
	mode string
	mu   sync.Mutex
	subs map[string]*outDir // by path below dir ("." the root)
	// missing: folders found missing when a file in them was to be
	// removed (a file written since is not one to remove).
	missing map[string]bool
}

// newOutTree is the tree of root, already open ("." of subs), or of dir
// with nothing opened yet (root nil).
func newOutTree(dir, mode string, root *outDir) *outTree {
	t := &outTree{dir: dir, mode: mode, subs: map[string]*outDir{}, missing: map[string]bool{}}
	if root != nil {
		t.subs["."] = root
	}
	return t
}

// sub is the folder rel below the tree, opened (and with create, made
// and its making made durable) if it was not; nil without create if it
// is not there.
func (t *outTree) sub(rel string, create bool) (*outDir, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d, ok := t.subs[rel]; ok {
		return d, nil
	}
	path := filepath.Join(t.dir, rel)
	if !create {
		if t.missing[rel] {
			return nil, nil
		}
		if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
			t.missing[rel] = true
			return nil, nil
		}
	} else if err := mkdirDurable(path); err != nil {
		return nil, err
	}
	d, _, err := openOutDir(path, t.mode, nil)
	if err != nil {
		return nil, err
	}
	t.subs[rel] = d
	return d, nil
}

// mkdirDurable makes the folder path and its missing parents, and fsyncs
// the parent of each it made, so that the names survive a crash.
func mkdirDurable(path string) error {
	var made []string
	for p := path; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		made = append(made, p)
		if filepath.Dir(p) == p {
			break
		}
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	for _, p := range made {
		if err := syncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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

// size is the size of the regular file rel, if it is there.
func (t *outTree) size(rel string) (int64, bool) {
	fi, err := os.Lstat(filepath.Join(t.dir, rel))
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	return fi.Size(), true
}

// path is the file rel's path.
func (t *outTree) path(rel string) string { return filepath.Join(t.dir, rel) }
