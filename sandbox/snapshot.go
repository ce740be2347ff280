package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	"github.com/klauspost/compress/s2"

	"github.com/stint-run/stint/sandbox/internal/resume"
	"github.com/stint-run/stint/sandbox/internal/rewrite"
	"github.com/stint-run/stint/sandbox/internal/verify"
)

// A Snapshot is a suspended guest (KindSuspended): a run given it
// (Spec.Resume) goes on where it stopped, anywhere (docs/sandbox.md).
type Snapshot struct {
	Module    string        // the sha256 of the module it was taken from
	WorkUnits int64         // the work the guest had done, over all its runs
	RunTime   time.Duration // the time it had run, over all its runs

	versions    [3]int            // resume.Version, rewrite.Version, verify.Version it was taken under
	pages       uint32            // the memory's size in pages
	memory      map[uint32][]byte // every page that is not all zeros, by index
	globals     []uint64          // the module's own mutable globals, in order
	frames      []uint64          // the saved call stack (sandbox/internal/resume)
	stdout      []byte            // what the guest had written to stdout, up to its cap
	stderr      []byte            // and to stderr
	stdoutBytes int64             // every byte it had tried to write to stdout
	stderrBytes int64             // and to stderr
	stdinRead   int64             // the bytes of stdin it had read
	clock       int64             // its monotonic clock, in nanoseconds, when it stopped
	sleepLeft   int64             // suspended asleep (poll_oneoff): the nanoseconds of its sleep left; else -1
	identity    [32]byte          // the sha256 of its arguments and environment
}

// snapshotMagic starts an encoded snapshot; snapshotFormat is its layout's
// version.
const (
	snapshotMagic  = "STINTSNP"
	snapshotFormat = 2
)

// ErrSnapshotMismatch: not the run's module, version, arguments or env.
var ErrSnapshotMismatch = errors.New("the snapshot does not match")

// snapshotIdentity hashes what a resumed run must be given again: its
// name, arguments and environment, and its mounts' guest paths (in order:
// the guest's descriptors of their directories) and modes.
func snapshotIdentity(name string, args []string, env map[string]string, mounts []Mount) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "%q\n", name)
	for _, a := range args {
		fmt.Fprintf(h, "arg %q\n", a)
	}
	for _, m := range mounts {
		fmt.Fprintf(h, "mount %q writable %t\n", m.GuestPath, m.Writable)
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "env %q=%q\n", k, env[k])
	}
	var id [32]byte
	h.Sum(id[:0])
	return id
}

func currentVersions() [3]int { return [3]int{resume.Version, rewrite.Version, verify.Version} }

// check reports why s cannot resume in mod with spec.
func (s *Snapshot) check(mod *Module, spec *Spec) error {
	switch {
	case s.Module != mod.SHA256:
		return fmt.Errorf("%w: it was taken from module %s, not %s", ErrSnapshotMismatch, short(s.Module), short(mod.SHA256))
	case s.versions != currentVersions():
		return fmt.Errorf("%w: it was taken by another version of Stint (resume, rewrite and verifier versions %v, here %v)",
			ErrSnapshotMismatch, s.versions, currentVersions())
	case !mod.resumable:
		return fmt.Errorf("%w: the module is not resumable here (sandbox.resumable is off, or the module cannot be)", ErrSnapshotMismatch)
	case s.identity != snapshotIdentity(spec.Name, spec.Args, spec.Env, spec.Mounts):
		return fmt.Errorf("%w: the task's arguments, environment or mounts changed since", ErrSnapshotMismatch)
	case len(s.globals) != len(mod.resumeGlobals):
		return fmt.Errorf("%w: %d globals, the module has %d", ErrSnapshotMismatch, len(s.globals), len(mod.resumeGlobals))
	}
	for p, b := range s.memory {
		if p >= s.pages || len(b) != PageSize {
			return fmt.Errorf("%w: page %d of %d bytes in a memory of %d pages", ErrSnapshotMismatch, p, len(b), s.pages)
		}
	}
	return nil
}

func short(sha string) string { return sha[:min(len(sha), 12)] }

// Encode writes s in its portable form (docs/sandbox.md).
func (s *Snapshot) Encode(w io.Writer) error {
	if b, ok := w.(*bytes.Buffer); ok {
		// Grown once: a buffer grown by the encoder's writes took 2 s for
		// 240 MiB, and 40 ms grown at once.
		b.Grow(len(s.memory)*(PageSize+8) + 8*(len(s.globals)+len(s.frames)) + len(s.stdout) + len(s.stderr) + 1<<10)
	}
	if _, err := io.WriteString(w, snapshotMagic); err != nil {
		return err
	}
	if err := binary.Write(w, binary.LittleEndian, uint32(snapshotFormat)); err != nil {
		return err
	}
	zw := s2.NewWriter(w, s2.WriterConcurrency(2))
	e := snapWriter{w: zw}
	e.str(s.Module)
	for _, v := range s.versions {
		e.u64(uint64(v))
	}
	e.u64(uint64(s.pages))
	pages := make([]uint32, 0, len(s.memory))
	for p := range s.memory {
		pages = append(pages, p)
	}
	slices.Sort(pages)
	e.u64(uint64(len(pages)))
	for _, p := range pages {
		e.u64(uint64(p))
		e.raw(s.memory[p])
	}
	e.words(s.globals)
	e.words(s.frames)
	e.str(string(s.stdout))
	e.str(string(s.stderr))
	for _, v := range []int64{s.stdoutBytes, s.stderrBytes, s.stdinRead, s.clock, s.sleepLeft, s.WorkUnits, int64(s.RunTime)} {
		e.u64(uint64(v))
	}
	e.raw(s.identity[:])
	if e.err != nil {
		_ = zw.Close()
		return e.err
	}
	return zw.Close()
}

// maxSnapshotField bounds one field of a snapshot being decoded (a
// corrupt length must not allocate without end).
const maxSnapshotField = 1 << 33

// DecodeSnapshot reads what Encode wrote; damaged input is an error.
func DecodeSnapshot(r io.Reader) (*Snapshot, error) {
	head := make([]byte, len(snapshotMagic)+4)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errors.New("sandbox: not a Stint snapshot")
	}
	if f := binary.LittleEndian.Uint32(head[len(snapshotMagic):]); f != snapshotFormat {
		return nil, fmt.Errorf("sandbox: snapshot format %d; this Stint reads format %d", f, snapshotFormat)
	}
	d := snapReader{r: s2.NewReader(r)}
	s := &Snapshot{memory: map[uint32][]byte{}}
	s.Module = d.str()
	for i := range s.versions {
		s.versions[i] = int(d.u64())
	}
	s.pages = uint32(d.u64())
	n := d.u64()
	for i := uint64(0); i < n && d.err == nil; i++ {
		p := uint32(d.u64())
		s.memory[p] = d.raw(PageSize)
	}
	s.globals = d.words()
	s.frames = d.words()
	s.stdout = []byte(d.str())
	s.stderr = []byte(d.str())
	for _, v := range []*int64{&s.stdoutBytes, &s.stderrBytes, &s.stdinRead, &s.clock, &s.sleepLeft, &s.WorkUnits, (*int64)(&s.RunTime)} {
		*v = int64(d.u64())
	}
	copy(s.identity[:], d.raw(32))
	if d.err != nil {
		return nil, fmt.Errorf("sandbox: damaged snapshot: %w", d.err)
	}
	return s, nil
}

type snapWriter struct {
	w   io.Writer
	err error
	b   [8]byte
}

func (e *snapWriter) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *snapWriter) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.b[:], v)
	e.raw(e.b[:])
}

func (e *snapWriter) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}

func (e *snapWriter) words(ws []uint64) {
	e.u64(uint64(len(ws)))
	b := make([]byte, 8*len(ws))
	for i, w := range ws {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	e.raw(b)
}

type snapReader struct {
	r   io.Reader
	err error
}

func (d *snapReader) raw(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > maxSnapshotField {
		d.err = fmt.Errorf("a field of %d bytes", n)
		return nil
	}
	if n <= 1<<20 { // a page, a name: read in place
		b := make([]byte, n)
		if _, err := io.ReadFull(d.r, b); err != nil {
			d.err = err
			return nil
		}
		return b
	}
	var buf bytes.Buffer // a length a damaged snapshot may lie about: grown as it is read
	if _, err := io.CopyN(&buf, d.r, int64(n)); err != nil {
		d.err = err
		return nil
	}
	return buf.Bytes()
}

func (d *snapReader) u64() uint64 {
	b := d.raw(8)
	if len(b) < 8 {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (d *snapReader) str() string { return string(d.raw(d.u64())) }

func (d *snapReader) words() []uint64 {
	n := d.u64()
	if n > maxSnapshotField/8 {
		d.err = fmt.Errorf("%d words", n)
		return nil
	}
	b := d.raw(8 * n)
	ws := make([]uint64, len(b)/8)
	for i := range ws {
		ws[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return ws
}

// StdoutLen is the stdout a resumed run's Outcome.Stdout starts with.
func (s *Snapshot) StdoutLen() int { return len(s.stdout) }
