package batch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/stint-run/stint/internal/termsafe"
)

// listed is an entry of a folder that may be an input.
type listed struct {
	dir  *inputDir
	name string // its name in dir
	path string // as listed: --in joined with rel, the glob's match, the line of --files-from
	rel  string // its path below --in (or the glob's fixed part): its default output name
}

// listInputs resolves the inputs of c: --files-from's list, else --in, a
// folder (every regular file of its tree, not those whose name, or a
// folder's on the way, starts with a dot), a file, or a glob pattern
// (the regular files it matches; ** matches any number of folders). It
// returns the inputs, in the order listed (a folder's and a glob's sorted
// by path), and the folders they are in, open (the caller closes them).
// Links are never followed below --in: a link to a file is listed, and
// fails when it is opened (inputdir.go); one to a folder is skipped as a
// dot-name is, except in a glob without **, whose match lists it (and its
// inputs fail). skipDir, if not nil, tells a folder not to walk (the
// output folder, by device and inode). Every error is a usage error:
// nothing has been done yet.
func listInputs(c Config, skipDir func(fs.FileInfo) bool) ([]*batchInput, []*inputDir, error) {
	l := &lister{skipDir: skipDir}
	var err error
	switch {
	case c.FilesFrom != "" && c.In != "":
		return nil, nil, inputErrorf("--in and --files-from both name the inputs: give one")
	case c.FilesFrom != "":
		err = l.filesFrom(c.FilesFrom, c.NullSeparated)
	default:
		err = l.in(c.In)
	}
	if err != nil {
		l.closeDirs()
		return nil, nil, err
	}
	if c.FilesFrom == "" {
		sort.Slice(l.ents, func(i, j int) bool { return l.ents[i].rel < l.ents[j].rel })
	}
	inputs, err := l.inputs()
	if err != nil {
		l.closeDirs()
		return nil, nil, err
	}
	if len(inputs) == 0 {
		l.closeDirs()
		if c.FilesFrom != "" {
			return nil, nil, inputErrorf("--files-from %s: no input files listed", termsafe.String(c.FilesFrom))
		}
		return nil, nil, inputErrorf("--in %s: no input files (want regular files; names starting with a dot are skipped)", termsafe.String(c.In))
	}
	return inputs, l.dirs, nil
}

// lister gathers the entries that may be inputs.
type lister struct {
	ents    []listed
	dirs    []*inputDir
	skipDir func(fs.FileInfo) bool
	// checked: the entries were checked to be regular files or links to
	// them (a folder's walk); else inputs does.
	checked bool
	// fromList: the entries are --files-from's, each as named.
	fromList bool
}

func (l *lister) closeDirs() {
	for _, d := range l.dirs {
		_ = d.Close()
	}
}

// in lists --in: a folder, a file or a glob.
func (l *lister) in(in string) error {
	if in == "" {
		return inputErrorf("--in is required: a folder of input files, or a glob like 'data/*.txt' (or --files-from)")
	}
	fi, err := os.Stat(in)
	switch {
	case err == nil && fi.IsDir():
		d, err := openInputDir(in)
		if err != nil {
			return inputErrorf("--in %s: %v", termsafe.String(in), err)
		}
		l.dirs = append(l.dirs, d)
		l.checked = true
		return l.walk(d, in, "")
	case err == nil:
		d, err := openInputDir(filepath.Dir(in))
		if err != nil {
			return inputErrorf("--in %s: %v", termsafe.String(in), err)
		}
		l.dirs = append(l.dirs, d)
		l.ents = append(l.ents, listed{dir: d, name: filepath.Base(in), path: in, rel: filepath.Base(in)})
		return nil
	case errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(in, "*?["):
		return l.glob(in)
	case errors.Is(err, fs.ErrNotExist):
		return inputErrorf("--in %s: no such folder", termsafe.String(in))
	default:
		return inputErrorf("--in %s: %v", termsafe.String(in), err)
	}
}

// walk lists the tree of the folder d (path as listed, rel below --in):
// its regular files and links to them, not names starting with a dot;
// its subfolders opened without following a link (a link to a folder is
// skipped).
func (l *lister) walk(d *inputDir, path, rel string) error {
	des, err := d.entries()
	if err != nil {
		return inputErrorf("--in %s: %v", termsafe.String(path), err)
	}
	for _, e := range des {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		// The entry's type as the folder's listing gave it (d_type; Go's
		// ReadDir lstats an entry the file system gives no type for): no
		// stat per file here (inputs stats each regular file once, for its
		// size, and skips what is no longer one).
		mode := e.Type()
		p, r := filepath.Join(path, name), filepath.Join(rel, name)
		switch {
		case mode.IsDir():
			sub, err := l.enter(d, name)
			if err != nil {
				return err
			} else if sub == nil {
				continue
			}
			if err := l.walk(sub, p, r); err != nil {
				return err
			}
		case mode&fs.ModeSymlink != 0:
			// Listed (so that it fails, saying why) only if it leads to a
			// file: a link to a folder is skipped as a folder is not walked.
			if to, _, err := d.lstat(name, true); err == nil && to.IsRegular() {
				l.ents = append(l.ents, listed{dir: d, name: name, path: p, rel: r})
			}
		case mode.IsRegular():
			l.ents = append(l.ents, listed{dir: d, name: name, path: p, rel: r})
		}
	}
	return nil
}

// enter opens d's folder name to list it, and keeps it among the folders
// the inputs are opened from; it is nil, and closed, where skipDir skips
// it.
func (l *lister) enter(d *inputDir, name string) (*inputDir, error) {
	sub, err := d.sub(name)
	if err != nil {
		return nil, inputErrorf("--in: folder %v", termsafe.String(err.Error()))
	}
	if l.skipDir != nil && l.skipDir(sub.fi) {
		_ = sub.Close()
		return nil, nil
	}
	l.dirs = append(l.dirs, sub)
	return sub, nil
}

// glob lists the files a glob pattern matches, below its fixed part (the
// folder the user named, opened as named): names starting with a dot are
// skipped unless the pattern's part that matches them starts with one.
// A pattern with ** walks the tree (** matches any number of folders,
// none included) and follows no link; one without is filepath.Glob's,
// and a folder it matched below the fixed part that is a link is not
// followed when its inputs are opened (they fail).
func (l *lister) glob(in string) error {
	root := globRoot(in)
	rd, err := openInputDir(root)
	if err != nil {
		return inputErrorf("--in %q: %v", in, err)
	}
	l.dirs = append(l.dirs, rd)
	relPattern, err := filepath.Rel(root, filepath.Clean(in))
	if err != nil {
		return inputErrorf("--in %q: %v", in, err)
	}
	segs := strings.Split(filepath.Clean(relPattern), string(filepath.Separator))
	for _, s := range segs {
		if s != "**" && strings.Contains(s, "**") {
			return inputErrorf("--in %q: ** must be a whole part of the path (data/**/*.txt)", in)
		}
		if _, err := filepath.Match(s, ""); err != nil {
			return inputErrorf("--in %q: %v", in, err)
		}
	}
	if strings.Contains(in, "**") {
		l.checked = true
		seen := map[string]bool{}
		return l.globWalk(rd, root, "", segs, seen)
	}
	paths, err := filepath.Glob(in)
	if err != nil {
		return inputErrorf("--in %q: %v", in, err)
	}
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
			l.dirs = append(l.dirs, d)
		}
		subs[rel] = d
		return d
	}
	for _, p := range paths {
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return inputErrorf("--in %q: %s is not below %s", in, termsafe.String(p), termsafe.String(root))
		}
		if dotSkipped(strings.Split(rel, string(filepath.Separator)), segs) {
			continue
		}
		l.ents = append(l.ents, listed{dir: subDir(filepath.Dir(rel)), name: filepath.Base(p), path: p, rel: rel})
	}
	return nil
}

// dotSkipped reports whether a path below a glob's fixed part (parts)
// has a part starting with a dot that the pattern's part (segs) does not
// name with a leading dot.
func dotSkipped(parts, segs []string) bool {
	for i, p := range parts {
		if strings.HasPrefix(p, ".") && (i >= len(segs) || !strings.HasPrefix(segs[i], ".")) {
			return true
		}
	}
	return false
}

// globWalk lists the files of d (path as listed, rel below the glob's
// fixed part) that match segs, a pattern's parts below it.
func (l *lister) globWalk(d *inputDir, path, rel string, segs []string, seen map[string]bool) error {
	if len(segs) == 0 {
		return nil
	}
	seg := segs[0]
	des, err := d.entries()
	if err != nil {
		return inputErrorf("--in %s: %v", termsafe.String(path), err)
	}
	if seg == "**" {
		if err := l.globWalk(d, path, rel, segs[1:], seen); err != nil { // no folder
			return err
		}
	}
	for _, e := range des {
		name := e.Name()
		if strings.HasPrefix(name, ".") && (seg == "**" || !strings.HasPrefix(seg, ".")) {
			continue
		}
		if seg != "**" {
			if ok, _ := filepath.Match(seg, name); !ok {
				continue
			}
		}
		mode := e.Type() // as in walk: no stat per file
		p, r := filepath.Join(path, name), filepath.Join(rel, name)
		last := len(segs) == 1 && seg != "**"
		switch {
		case mode.IsDir() && !last:
			sub, err := l.enter(d, name)
			if err != nil {
				return err
			} else if sub == nil {
				continue
			}
			next := segs[1:]
			if seg == "**" {
				next = segs // one folder more, or more
			}
			if err := l.globWalk(sub, p, r, next, seen); err != nil {
				return err
			}
		case !last || seen[r]:
		case mode&fs.ModeSymlink != 0:
			if to, _, err := d.lstat(name, true); err == nil && to.IsRegular() {
				seen[r] = true
				l.ents = append(l.ents, listed{dir: d, name: name, path: p, rel: r})
			}
		case mode.IsRegular():
			seen[r] = true
			l.ents = append(l.ents, listed{dir: d, name: name, path: p, rel: r})
		}
	}
	return nil
}

// entries are the folder's entries, read once (a glob with ** looks at
// them more than once, and a folder's offset stays at its end).
func (d *inputDir) entries() ([]os.DirEntry, error) {
	if !d.read {
		d.ents, d.entsErr = d.f.ReadDir(-1)
		d.read = true
	}
	return d.ents, d.entsErr
}

// filesFrom lists the paths of the file name ("-": stdin), one a line
// (empty lines skipped; a trailing \r is kept: it may be part of a
// name), or NUL-separated (null). Each path is opened one name at a
// time from the working folder (a relative path) or the root (an
// absolute one), following no link in its folders (listedDir) nor at its
// end. An input's default output name is its path
// as listed when that is relative and stays below the working folder,
// else its base name.
func (l *lister) filesFrom(name string, null bool) error {
	var r io.Reader
	if name == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return inputErrorf("--files-from %s: %v", termsafe.String(name), unwrapPathError(err))
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	sep := byte('\n')
	if null {
		sep = 0
	}
	l.fromList = true
	dirs := map[string]*inputDir{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, sep); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	line := 0
	for sc.Scan() {
		line++
		p := sc.Text()
		if p == "" {
			continue
		}
		if !null && strings.ContainsRune(p, 0) {
			return inputErrorf("--files-from %s: line %d holds a NUL byte: use --null for a NUL-separated list (find -print0)", termsafe.String(name), line)
		}
		d := l.listedDir(dirs, filepath.Dir(p))
		l.ents = append(l.ents, listed{dir: d, name: filepath.Base(p), path: p, rel: p})
	}
	if err := sc.Err(); err != nil {
		return inputErrorf("--files-from %s: %v", termsafe.String(name), err)
	}
	return nil
}

// listedDir is the folder dp of a --files-from path, opened one name at
// a time without following a link (inputDir.sub) from the list's base:
// the working folder for a relative path, the root for an absolute one.
// dirs holds the folders opened so far, by path; a folder that cannot be
// opened (a link, missing) is a failedDir, whose inputs fail saying why.
func (l *lister) listedDir(dirs map[string]*inputDir, dp string) *inputDir {
	if d, ok := dirs[dp]; ok {
		return d
	}
	var d *inputDir
	var err error
	if parent := filepath.Dir(dp); parent == dp || dp == "." { // the base: "/" (or a volume's root), or "."
		d, err = openInputDir(dp)
	} else if pd := l.listedDir(dirs, parent); pd.err != nil {
		d = failedDir(dp, pd.err)
	} else {
		d, err = pd.sub(filepath.Base(dp))
	}
	switch {
	case err != nil:
		d = failedDir(dp, err)
	case d.err == nil:
		l.dirs = append(l.dirs, d)
	}
	dirs[dp] = d
	return d
}

// inputs makes the inputs of the entries listed.
func (l *lister) inputs() ([]*batchInput, error) {
	// What filepath.Abs does, with the working directory read once
	// (filepath.Abs reads it again for every path: a third of a listing).
	wd, err := os.Getwd()
	if err != nil {
		return nil, inputErrorf("inputs: %v", err)
	}
	inputs := make([]*batchInput, 0, len(l.ents))
	seen := make(map[string]string, len(l.ents))
	for _, e := range l.ents {
		var size int64
		if e.dir.err == nil {
			mode, sz, err := e.dir.lstat(e.name, false)
			switch {
			case err != nil && l.fromList:
				// Listed: it fails when it is read, saying why.
			case errors.Is(err, fs.ErrNotExist):
				continue // removed since its folder was listed
			case err != nil:
				return nil, inputErrorf("input %v", termsafe.String(err.Error()))
			case mode&fs.ModeSymlink != 0:
				if !l.checked && !l.fromList {
					// Listed (so that it fails, saying why) only if it
					// leads to a file: a link to a folder is skipped.
					if to, _, err := e.dir.lstat(e.name, true); err != nil || !to.IsRegular() {
						continue
					}
				}
				sz = 0 // never read
			case !mode.IsRegular() && !l.fromList:
				continue
			}
			size = sz
		}
		abs := filepath.Clean(e.path)
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(wd, abs)
		}
		if other, dup := seen[abs]; dup && l.fromList {
			return nil, collisionErrorf("--files-from lists %s twice (also as %s)", termsafe.String(e.path), termsafe.String(other))
		}
		seen[abs] = e.path
		inputs = append(inputs, &batchInput{name: e.name, listed: e.path, rel: e.rel, dir: e.dir, path: abs, size: size, perm: 0o600, seq: len(inputs) + 1})
	}
	return inputs, nil
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

// checkOutNames refuses outputs that would collide: two inputs with one
// output name, or an output name that leaves Out or lies in the batch's
// own folder (StateDir).
func checkOutNames(inputs []*batchInput) error {
	seen := make(map[string]string, len(inputs))
	for _, in := range inputs {
		if err := validOutName(in.out); err != nil {
			return collisionErrorf("input %s: output name %s: %v", termsafe.String(in.listed), termsafe.String(in.out), err)
		}
		if other, dup := seen[in.out]; dup {
			return collisionErrorf("inputs %s and %s have the same output name %s; give --output-name a template that tells them apart ({} or {#}) or run two batches",
				termsafe.String(other), termsafe.String(in.listed), termsafe.String(in.out))
		}
		seen[in.out] = in.listed
	}
	// A name that is another's folder (a and a/b) cannot be both.
	for _, in := range inputs {
		for d := filepath.Dir(in.out); d != "."; d = filepath.Dir(d) {
			if other, ok := seen[d]; ok {
				return collisionErrorf("inputs %s and %s: output %s would be a folder of output %s", termsafe.String(other), termsafe.String(in.listed), termsafe.String(d), termsafe.String(in.out))
			}
		}
	}
	return nil
}

// validOutName reports why name cannot be an output's path below Out.
func validOutName(name string) error {
	switch {
	case name == "" || name == ".":
		return fmt.Errorf("empty")
	case filepath.IsAbs(name):
		return fmt.Errorf("absolute: an output's name is a path below --out")
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("holds a NUL byte")
	}
	if filepath.Clean(name) != name {
		return fmt.Errorf("not a clean path (no ./, .., // or trailing /)")
	}
	for _, part := range strings.Split(name, string(filepath.Separator)) {
		if part == ".." {
			return fmt.Errorf("leaves --out (..)")
		}
		if strings.HasPrefix(part, StateDir) || strings.HasPrefix(part, tempPrefix) {
			return fmt.Errorf("names starting with %s are the batch's own", StateDir)
		}
	}
	return nil
}
