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
	reading     bool              // suspended waiting in a read of stdin (not encoded: the call is made again)
	identity    [32]byte          // the sha256 of its arguments and environment
}

// snapshotMagic starts an encoded snapshot, deltaMagic each delta after
// it (EncodeDelta); snapshotFormat is their layout's version. Format 2 (a
// whole snapshot, no length, no deltas after it) is still read.
const (
	snapshotMagic  = "STINTSNP"
	deltaMagic     = "STINTSND"
	snapshotFormat = 3
	legacyFormat   = 2
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
	size := len(s.memory)*(PageSize+8) + 8*(len(s.globals)+len(s.frames)) + len(s.stdout) + len(s.stderr) + 1<<10
	return writeRecord(w, snapshotMagic, size, func(e *snapWriter) {
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
		s.encodeRest(e)
	})
}

// encodeRest writes what follows the memory in a whole record and in a
// delta alike: every field but the memory, whole.
func (s *Snapshot) encodeRest(e *snapWriter) {
	e.words(s.globals)
	e.words(s.frames)
	e.str(string(s.stdout))
	e.str(string(s.stderr))
	for _, v := range []int64{s.stdoutBytes, s.stderrBytes, s.stdinRead, s.clock, s.sleepLeft, s.WorkUnits, int64(s.RunTime)} {
		e.u64(uint64(v))
	}
	e.raw(s.identity[:])
}

// writeRecord writes one record: magic, format, the length of its body,
// and its body, which body writes through an S2 stream (klauspost/compress).
// size is about what the body takes before compression, to grow a
// bytes.Buffer once (a buffer grown by the encoder's writes took 2 s for
// 240 MiB, and 40 ms grown at once).
func writeRecord(w io.Writer, magic string, size int, body func(*snapWriter)) error {
	buf, direct := w.(*bytes.Buffer)
	if !direct {
		buf = new(bytes.Buffer)
	}
	buf.Grow(size + len(magic) + 12)
	buf.WriteString(magic)
	_ = binary.Write(buf, binary.LittleEndian, uint32(snapshotFormat))
	at := buf.Len()
	buf.Write(make([]byte, 8)) // the body's length, once known
	zw := s2.NewWriter(buf, s2.WriterConcurrency(2))
	e := snapWriter{w: zw}
	body(&e)
	if err := errors.Join(e.err, zw.Close()); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(buf.Bytes()[at:], uint64(buf.Len()-at-8))
	if direct {
		return nil
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// A SnapshotDigest is what EncodeDelta encodes against: an encoding's
// records and the SHA-256 of each page of its snapshot.
type SnapshotDigest struct {
	module  string
	records int
	pages   map[uint32][32]byte
}

// digest returns the digest of s as Encode encodes it.
func (s *Snapshot) digest() *SnapshotDigest {
	d := &SnapshotDigest{module: s.Module, records: 1, pages: make(map[uint32][32]byte, len(s.memory))}
	for p, b := range s.memory {
		d.pages[p] = sha256.Sum256(b)
	}
	return d
}

// EncodeDelta writes s as what changed since the earlier snapshot of its
// run that prev digests (docs/sandbox.md), or whole (Encode) when prev is
// nil, and returns the digest of what it wrote with prev's encoding.
func (s *Snapshot) EncodeDelta(w io.Writer, prev *SnapshotDigest) (*SnapshotDigest, error) {
	if prev == nil {
		return s.digest(), s.Encode(w)
	}
	if prev.module != s.Module {
		return nil, errors.New("sandbox: a delta against a snapshot of another module")
	}
	next := &SnapshotDigest{module: s.Module, records: prev.records + 1, pages: make(map[uint32][32]byte, len(s.memory))}
	var changed, zeroed []uint32
	for p, b := range s.memory {
		sum := sha256.Sum256(b)
		next.pages[p] = sum
		if old, ok := prev.pages[p]; !ok || old != sum {
			changed = append(changed, p)
		}
	}
	for p := range prev.pages {
		if _, ok := s.memory[p]; !ok {
			zeroed = append(zeroed, p)
		}
	}
	slices.Sort(changed)
	slices.Sort(zeroed)
	size := len(changed)*(PageSize+8) + 8*(len(zeroed)+len(s.globals)+len(s.frames)) + len(s.stdout) + len(s.stderr) + 1<<10
	err := writeRecord(w, deltaMagic, size, func(e *snapWriter) {
		e.str(s.Module)
		for _, v := range s.versions {
			e.u64(uint64(v))
		}
		e.u64(uint64(prev.records))
		e.u64(uint64(s.pages))
		e.u64(uint64(len(changed)))
		for _, p := range changed {
			e.u64(uint64(p))
			e.raw(s.memory[p])
		}
		e.u64(uint64(len(zeroed)))
		for _, p := range zeroed {
			e.u64(uint64(p))
		}
		s.encodeRest(e)
	})
	if err != nil {
		return nil, err
	}
	return next, nil
}

// maxSnapshotField bounds one field of a snapshot being decoded (a
// corrupt length must not allocate without end).
const maxSnapshotField = 1 << 33

// DecodeSnapshot reads what Encode, then EncodeDelta, wrote; damaged
// input is an error.
func DecodeSnapshot(r io.Reader) (*Snapshot, error) {
	format, body, err := readRecordHead(r, snapshotMagic)
	if err == io.EOF {
		err = errors.New("empty")
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: not a Stint snapshot: %w", err)
	}
	d := snapReader{r: s2.NewReader(body)}
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
	s.decodeRest(&d)
	if d.err != nil {
		return nil, fmt.Errorf("sandbox: damaged snapshot: %w", d.err)
	}
	if format == legacyFormat {
		return s, nil
	}
	if err := endRecord(body); err != nil {
		return nil, fmt.Errorf("sandbox: damaged snapshot: %w", err)
	}
	for records := 1; ; records++ {
		_, body, err := readRecordHead(r, deltaMagic)
		if err == io.EOF {
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox: damaged snapshot: delta %d: %w", records, err)
		}
		if err := errors.Join(s.applyDelta(&snapReader{r: s2.NewReader(body)}, records), endRecord(body)); err != nil {
			return nil, fmt.Errorf("sandbox: damaged snapshot: delta %d: %w", records, err)
		}
	}
}

// readRecordHead reads a record's magic, format and length, and returns
// the format and a reader of its body (io.EOF: no record starts here).
// A whole snapshot of format 2 has no length: its body is the rest.
func readRecordHead(r io.Reader, magic string) (uint32, io.Reader, error) {
	head := make([]byte, len(magic)+4)
	if n, err := io.ReadFull(r, head); err != nil {
		if n == 0 && err == io.EOF {
			return 0, nil, io.EOF
		}
		return 0, nil, fmt.Errorf("a record cut short: %w", err)
	}
	if string(head[:len(magic)]) != magic {
		return 0, nil, fmt.Errorf("a record starts %q, not %q", head[:len(magic)], magic)
	}
	format := binary.LittleEndian.Uint32(head[len(magic):])
	if format == legacyFormat && magic == snapshotMagic {
		return format, r, nil
	}
	if format != snapshotFormat {
		return 0, nil, fmt.Errorf("snapshot format %d; this Stint reads format %d", format, snapshotFormat)
	}
	var n [8]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return 0, nil, fmt.Errorf("a record's length cut short: %w", err)
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > maxSnapshotField {
		return 0, nil, fmt.Errorf("a record of %d bytes", size)
	}
	return format, &exactReader{r: io.LimitReader(r, int64(size)), left: int64(size)}, nil
}

// endRecord reads what is left of a record's body after its fields (the
// end of its S2 stream), so that the next record is read from its start.
func endRecord(body io.Reader) error {
	_, err := io.Copy(io.Discard, body)
	return err
}

// exactReader is a record's body: reading past its end is an error, and
// so is a body shorter than its length (io.ErrUnexpectedEOF), so that a
// cut record is not taken for a whole one.
type exactReader struct {
	r    io.Reader
	left int64
}

func (x *exactReader) Read(p []byte) (int, error) {
	n, err := x.r.Read(p)
	x.left -= int64(n)
	if err == io.EOF && x.left > 0 {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// decodeRest reads what encodeRest wrote.
func (s *Snapshot) decodeRest(d *snapReader) {
	s.globals = d.words()
	s.frames = d.words()
	s.stdout = []byte(d.str())
	s.stderr = []byte(d.str())
	for _, v := range []*int64{&s.stdoutBytes, &s.stderrBytes, &s.stdinRead, &s.clock, &s.sleepLeft, &s.WorkUnits, (*int64)(&s.RunTime)} {
		*v = int64(d.u64())
	}
	copy(s.identity[:], d.raw(32))
}

// applyDelta applies the records-th record of an encoding, a delta, to
// s, the snapshot its records before it make.
func (s *Snapshot) applyDelta(d *snapReader, records int) error {
	module := d.str()
	var versions [3]int
	for i := range versions {
		versions[i] = int(d.u64())
	}
	after := d.u64()
	if d.err == nil && (module != s.Module || versions != s.versions || after != uint64(records)) {
		return fmt.Errorf("it follows record %d of module %s (versions %v), not record %d of module %s (versions %v)",
			after, short(module), versions, records, short(s.Module), s.versions)
	}
	pages := uint32(d.u64())
	if d.err == nil && pages < s.pages {
		return fmt.Errorf("a memory of %d pages after one of %d: a memory never shrinks", pages, s.pages)
	}
	s.pages = pages
	n := d.u64()
	for i := uint64(0); i < n && d.err == nil; i++ {
		p := uint32(d.u64())
		s.memory[p] = d.raw(PageSize)
	}
	n = d.u64()
	for i := uint64(0); i < n && d.err == nil; i++ {
		delete(s.memory, uint32(d.u64()))
	}
	s.decodeRest(d)
	return d.err
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
