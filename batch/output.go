package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/stint-run/stint/internal/fsutil"
	"github.com/stint-run/stint/internal/termsafe"
)

// TempPrefix starts the name of every temporary file a batch writes in
// the output folder; a batch removes those a killed one left.
const TempPrefix = ".stint-batch-"

const tempPrefix = TempPrefix

// errNoLink: this system cannot write an output as an unnamed file and
// link it (writeGroupLinked).
var errNoLink = errors.New("no O_TMPFILE and linkat here")

// outDir is the output folder of a batch. Every file is written whole or
// not at all: a temporary file in the same folder (on Linux an unnamed
// one, O_TMPFILE), made durable, then its name (linkat, or a rename), then
// an fsync of the folder (shared by the writers that named files
// meanwhile). On Linux files are written in groups (writeFiles): one
// syncfs(2) makes a group's data durable where the file system honours it
// (syncfsHonoured), else an fsync of each file does.
type outDir struct {
	dir string
	// f is the folder, opened once when the batch starts (openOutDir):
	// what --out was checked against (not the folder of an input), and
	// what unnamed files are created in and linked in (Linux; fd is its
	// descriptor, -1 elsewhere), and fsynced.
	f    *os.File
	fd   int
	sync dirSyncer
	// syncfs is syncfs(2) when the batch uses it (a file system and kernel
	// that honour it), nil when each file is fsynced. A test may replace it.
	syncfs func(fd int) error
	// syncfsCalls counts the syncfs calls (tests).
	syncfsCalls atomic.Int64
	// present holds the names the folder held when the batch started (it
	// is not changed after): only those need removing.
	present map[string]bool
	seq     atomic.Uint64
	// noLink is set once writeGroupLinked said errNoLink: every file is then
	// written to a named temporary file.
	noLink atomic.Bool
	// noEmptyPath is set once linkat(AT_EMPTY_PATH) was refused (Linux:
	// the process lacks CAP_DAC_READ_SEARCH): files are then linked
	// through their /proc/self/fd path.
	noEmptyPath atomic.Bool
}

// checkOutDir checks, before any work, that out is or can be a folder
// this process writes to, without leaving anything behind.
func checkOutDir(out string) error {
	if out == "" {
		return inputErrorf("--out is required: the folder the outputs are written to")
	}
	probe := out
	for {
		fi, err := os.Stat(probe)
		if err == nil {
			if !fi.IsDir() {
				return inputErrorf("--out %s: %s is not a folder", out, probe)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return inputErrorf("--out %s: %v", out, err)
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			return inputErrorf("--out %s: no existing parent folder", out)
		}
		probe = parent
	}
	f, err := os.CreateTemp(probe, tempPrefix+"probe-*")
	if err != nil {
		return inputErrorf("--out %s: the folder is not writable: %v", out, unwrapPathError(err))
	}
	_ = f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return inputErrorf("--out %s: %v", out, err)
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// openOutDir creates the folder if missing, opens it (once: the batch
// writes through that descriptor), has check check it (nil: no check;
// the batch refuses the folder of an input, by device and inode), and
// removes the temporary files an earlier batch left when it was killed.
// It returns how many it removed. mode is SyncAuto or SyncFile; the
// outDir says which it uses (usesSyncfs).
func openOutDir(dir, mode string, check func(fs.FileInfo) error) (*outDir, int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, 0, fmt.Errorf("--out %s: %w", termsafe.String(dir), err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return nil, 0, fmt.Errorf("--out %s: %w", termsafe.String(dir), err)
	}
	return outDirOf(f, dir, mode, check)
}

// outDirOf is openOutDir's work on the folder f (path dir), open; it
// closes f on an error.
func outDirOf(f *os.File, dir, mode string, check func(fs.FileInfo) error) (*outDir, int, error) {
	fi, err := f.Stat()
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("not a folder")
	}
	if err == nil && check != nil {
		err = check(fi)
	}
	var ents []os.DirEntry
	if err == nil {
		ents, err = f.ReadDir(-1)
	}
	if err != nil {
		_ = f.Close()
		var ie *InputError
		if errors.As(err, &ie) {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("--out %s: %w", termsafe.String(dir), err)
	}
	removed := 0
	present := map[string]bool{}
	for _, e := range ents {
		present[e.Name()] = true
		if strings.HasPrefix(e.Name(), tempPrefix) && e.Type().IsRegular() {
			if err := unlinkAt(f, dir, e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				_ = f.Close()
				return nil, removed, fmt.Errorf("removing a temporary file a stopped batch left: %w", err)
			}
			removed++
		}
	}
	o := &outDir{dir: dir, f: f, fd: descriptor(f), sync: dirSyncer{f: f}, present: present}
	if mode == SyncAuto {
		if ok, _ := syncfsHonoured(dir); ok {
			o.syncfs = syncfsCall
		}
	}
	return o, removed, nil
}

// usesSyncfs says whether groups of outputs are made durable with one
// syncfs(2) (else with an fsync of each file).
func (o *outDir) usesSyncfs() bool { return o.syncfs != nil }

// outputFile is a file to write in the output folder.
type outputFile struct {
	name string
	data []byte
	// perm is its mode (less the umask): that of its input & 0666
	// (outputPerm), so never wider than the input's.
	perm fs.FileMode
}

// writeFiles writes a group of files as write does each: every name
// appears with its whole, durable content or not at all. On Linux the
// group shares one durability barrier (one syncfs where honoured) and one
// fsync of the folder. errs[i] is the error of files[i].
func (o *outDir) writeFiles(files []outputFile) []error {
	var errs []error
	if o.noLink.Load() {
		errs = make([]error, len(files))
		for i := range errs {
			errs[i] = errNoLink
		}
	} else {
		errs = o.writeGroupLinked(files)
	}
	linked := false
	for i, err := range errs {
		switch {
		case err == nil:
			linked = true
		case errors.Is(err, errNoLink):
			o.noLink.Store(true)
			errs[i] = o.writeRenamed(files[i]) // syncs the folder itself
		}
	}
	if linked {
		if err := o.sync.sync(); err != nil {
			for i := range errs {
				if errs[i] == nil {
					errs[i] = err
				}
			}
		}
	}
	return errs
}

// write writes name (mode perm, less the umask) durably and atomically:
// readers see the old file or the new one, never part of it, before and
// after a crash.
func (o *outDir) write(name string, data []byte, perm fs.FileMode) error {
	return o.writeFiles([]outputFile{{name: name, data: data, perm: perm}})[0]
}

// tempName is a temporary name in the folder for the file name: a name of
// its own (the pid and a counter), which a later batch removes if this
// one leaves it behind.
func (o *outDir) tempName(name string) string {
	return filepath.Join(o.dir, fmt.Sprintf("%s%d-%d-%s", tempPrefix, os.Getpid(), o.seq.Add(1), name))
}

// writeRenamed is write with a named temporary file, fsync, rename.
func (o *outDir) writeRenamed(file outputFile) error {
	return fsutil.WriteFile(filepath.Join(o.dir, file.name), file.data, file.perm,
		fsutil.Options{TempName: filepath.Base(o.tempName(file.name)), SyncDir: o.sync.sync})
}

// remove deletes name, durably, if it was there when the batch started.
func (o *outDir) remove(name string) error {
	if !o.present[name] {
		return nil
	}
	err := unlinkAt(o.f, o.dir, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return o.sync.sync()
}

// dirSyncer fsyncs a folder (f, open) for many writers at once: a writer
// that renamed a file waits for an fsync that started after its rename,
// and the renames of writers that arrive while one runs share the next.
type dirSyncer struct {
	f       *os.File
	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	started uint64 // fsyncs started
	done    uint64 // fsyncs finished
	err     error
}

func (d *dirSyncer) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cond == nil {
		d.cond = sync.NewCond(&d.mu)
	}
	// An fsync that starts after now covers this writer's rename.
	// (One running now may have started before the rename.)
	need := d.started + 1
	for d.done < need {
		if !d.running {
			d.running = true
			d.started++
			d.mu.Unlock()
			err := d.f.Sync()
			d.mu.Lock()
			d.running = false
			d.done = d.started
			d.err = err
			d.cond.Broadcast()
			continue
		}
		d.cond.Wait()
	}
	return d.err
}

// Close closes the folder (once nothing writes in it any more).
func (o *outDir) Close() error { return o.f.Close() }
