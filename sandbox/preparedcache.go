package sandbox

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/stint-run/stint/internal/fsutil"
	"github.com/stint-run/stint/sandbox/internal/memory"
	"github.com/stint-run/stint/sandbox/internal/resume"
	"github.com/stint-run/stint/sandbox/internal/rewrite"
	"github.com/stint-run/stint/sandbox/internal/verify"
	"github.com/stint-run/stint/sandbox/internal/wasmbin"
)

// The prepared-module cache.
//
// Preparing a module (prepareModule's validation and rewrite, then its
// memory image) took about a third of a Go guest's cold start from
// wazero's compilation cache. With Config.CacheDir set, Stint keeps what
// preparation produced on disk, in preparedDir beside wazero's cache, one
// file per module and key: a start that finds it skips preparation
// entirely and hands wazero the same bytes as before (so wazero's own
// cache hits too).
//
// The key (preparedKey) is a sha256 of everything preparation's output
// and verdict depend on: the module's sha256, rewrite.Version, verify.Version,
// preparedFormat, the interrupt mode (loop checks or not), the benchmarks'
// rewrite.RedefineLoops switch, whether memory images are on, and every field of
// ModuleLimits (printed with %#v, so a field added later is in the key
// without anyone remembering to add it).
// Last, it holds the digest of the rewrite probe (rewriteprobe.wat), a
// small module prepared under the same limits and mode: a change to the
// rewrite or the image code that shows on the probe changes every key even
// if nobody bumped rewrite.Version. Only modules that pass are cached: a
// module over a limit is never stored, and a cached one under one set of
// limits is not found under another.
//
// An entry is written to a temporary file, synced and renamed into place
// (0600, in a 0700 directory, like wazero's files). It starts with a
// header that repeats its key and holds the CRC-32C and length of the rest:
// a torn or truncated write (a power loss), or a file put under another
// key's name, is detected on load, counted (Stats.PreparedCacheDamaged),
// and the module is prepared again and the entry rewritten. A checksum is
// not a signature: a local user who can write the cache directory can
// also write wazero's machine code there, and is out of the threat model
// (docs/security.md).

// preparedDir is the prepared-module cache's directory inside
// Config.CacheDir.
const preparedDir = "stint-prepared"

// preparedFormat numbers the entry layout and what preparation does past
// prepareModule (splitData): bump it on a change to either.
const preparedFormat = 1

// preparedMagic starts every entry.
const preparedMagic = "stintpm\x01"

// Entry layout, little-endian:
//
//	header: magic [8] | key [32] | crc32c of the body u32 | body length u64
//	body:   minPages u32 | hasImage u8 | image start u64 | image size u64 |
//	        image minBytes u64 | wasm length u64 | wasm | image bytes
const (
	preparedHeaderLen = 8 + 32 + 4 + 8
	preparedFixedLen  = 4 + 1 + 8 + 8 + 8 + 8
)

// errPreparedDamaged is wrapped by the load error of an entry that is not
// what was stored: torn, truncated, or under the wrong name.
var errPreparedDamaged = errors.New("damaged prepared-module cache entry")

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// rewriteProbe is rewriteprobe.wasm (see preparedKey).
//
//go:embed rewriteprobe.wasm
var rewriteProbe []byte

// preparedCache is the on-disk cache of prepared modules.
type preparedCache struct {
	dir           string
	hits, damaged atomic.Int64 // for Stats
}

// openPreparedCache makes the cache directory (0700) inside cacheDir.
func openPreparedCache(cacheDir string) (*preparedCache, error) {
	dir := filepath.Join(cacheDir, preparedDir)
	if err := fsutil.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("sandbox: prepared-module cache: %w", err)
	}
	return &preparedCache{dir: dir}, nil
}

// preparedKey is the cache key of the module sha prepared under lim, in
// the given mode (see the top of this file).
func preparedKey(sha string, lim *ModuleLimits, loopChecks, images, resumable bool) [32]byte {
	h := sha256.New()
	probe := probeDigest(lim, loopChecks, images)
	fmt.Fprintf(h, "stint prepared module\nformat %d\nrewrite %d\nverifier %d\nmodule %s\nloop checks %t\nredefine loops %t\nimages %t\nlimits %#v\nprobe %x\n",
		preparedFormat, rewrite.Version, verify.Version, sha, loopChecks, rewrite.RedefineLoops, images, *lim, probe)
	if resumable {
		fmt.Fprintf(h, "resumable %d\nblocking imports %v\n", resume.Version, blockingImports)
	}
	var key [32]byte
	h.Sum(key[:0])
	return key
}

// probeKey is everything the rewrite probe's preparation depends on.
type probeKey struct {
	lim                        ModuleLimits
	loopChecks, images, redefs bool
	unroll                     int
}

// probeDigests memoizes probeDigest: the probe's preparation depends only
// on a runtime's settings, so preparing it again for every module a
// runtime compiles would be the same work each time.
var probeDigests sync.Map // probeKey -> [32]byte

// probeDigest is the digest of the rewrite probe (rewriteprobe.wat)
// prepared under lim in the given mode, or of why it was refused.
func probeDigest(lim *ModuleLimits, loopChecks, images bool) [32]byte {
	k := probeKey{lim: *lim, loopChecks: loopChecks, images: images, redefs: rewrite.RedefineLoops, unroll: rewrite.UnrollCopies}
	if d, ok := probeDigests.Load(k); ok {
		return d.([32]byte)
	}
	h := sha256.New()
	probe, _, err := prepareInput(rewriteProbe, lim, loopChecks, images, false)
	if err != nil {
		fmt.Fprintf(h, "probe refused: %v\n", err)
	} else {
		fmt.Fprintf(h, "probe %d %d bytes\n", probe.minPages, len(probe.wasm))
		h.Write(probe.wasm)
		if im := probe.image; im != nil {
			fmt.Fprintf(h, "probe image %d %d %d\n", im.Start, im.Size, im.MinBytes)
			h.Write(im.Data)
		}
	}
	var d [32]byte
	h.Sum(d[:0])
	probeDigests.Store(k, d)
	return d
}

// path is the file of key.
func (c *preparedCache) path(key [32]byte) string {
	return filepath.Join(c.dir, hex.EncodeToString(key[:]))
}

// load reads the entry of key. A missing entry wraps fs.ErrNotExist, a
// damaged one errPreparedDamaged. The entry is read whole into a transient
// buffer (memory.TransientBuffer) and checked there; the module is copied out of it,
// and the image is left in it until the module's image has its backing
// (compileInput.done).
func (c *preparedCache) load(key [32]byte) (compileInput, error) {
	f, err := os.Open(c.path(key))
	if err != nil {
		return compileInput{}, err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return compileInput{}, err
	}
	size := fi.Size()
	if size < preparedHeaderLen+preparedFixedLen || size > maxPreparedEntry || int64(int(size)) != size {
		return compileInput{}, fmt.Errorf("%s: %w: %d bytes", c.path(key), errPreparedDamaged, size)
	}
	buf, free := memory.TransientBuffer(int(size))
	if _, err := io.ReadFull(f, buf); err != nil {
		free()
		return compileInput{}, fmt.Errorf("%s: %w: %w", c.path(key), errPreparedDamaged, err)
	}
	in, err := decodePrepared(buf, key)
	if err != nil {
		free()
		return compileInput{}, fmt.Errorf("%s: %w: %w", c.path(key), errPreparedDamaged, err)
	}
	if in.image == nil {
		free()
	} else {
		in.release = free
	}
	return in, nil
}

// maxPreparedEntry bounds what load reads: a module is at most 4 GiB, and
// so is its memory image.
const maxPreparedEntry = 8 << 30

// decodePrepared checks and decodes an entry read for key. The module is
// a copy (wazero keeps it as long as the module is compiled); the image's
// bytes are a slice of b.
func decodePrepared(b []byte, key [32]byte) (compileInput, error) {
	if len(b) < preparedHeaderLen+preparedFixedLen {
		return compileInput{}, fmt.Errorf("%d bytes, shorter than a header", len(b))
	}
	if string(b[:8]) != preparedMagic {
		return compileInput{}, errors.New("bad magic")
	}
	if !bytes.Equal(b[8:40], key[:]) {
		return compileInput{}, errors.New("the entry is for another key")
	}
	sum := binary.LittleEndian.Uint32(b[40:44])
	body := b[preparedHeaderLen:]
	if n := binary.LittleEndian.Uint64(b[44:52]); n != uint64(len(body)) {
		return compileInput{}, fmt.Errorf("body of %d bytes, the header says %d (truncated?)", len(body), n)
	}
	if crc32.Checksum(body, crc32c) != sum {
		return compileInput{}, errors.New("checksum mismatch")
	}
	minPages := binary.LittleEndian.Uint32(body[0:4])
	hasImage := body[4]
	start := binary.LittleEndian.Uint64(body[5:13])
	size := binary.LittleEndian.Uint64(body[13:21])
	minBytes := binary.LittleEndian.Uint64(body[21:29])
	wasmLen := binary.LittleEndian.Uint64(body[29:37])
	rest := body[preparedFixedLen:]
	switch {
	case hasImage > 1:
		return compileInput{}, fmt.Errorf("bad image flag %d", hasImage)
	case wasmLen > uint64(len(rest)) || uint64(len(rest))-wasmLen != size:
		return compileInput{}, fmt.Errorf("lengths do not add up: %d bytes for a %d-byte module and a %d-byte image", len(rest), wasmLen, size)
	case hasImage == 0 && size != 0:
		return compileInput{}, errors.New("image bytes without an image")
	case hasImage == 1 && (size == 0 || minBytes != uint64(minPages)*PageSize || start > minBytes || size > minBytes-start):
		return compileInput{}, fmt.Errorf("image [%d, +%d) does not fit the declared minimum of %d pages", start, size, minPages)
	case wasmLen < 8 || !bytes.Equal(rest[:4], wasmbin.Magic):
		return compileInput{}, errors.New("not a WebAssembly module")
	}
	in := compileInput{wasm: bytes.Clone(rest[:wasmLen]), minPages: minPages}
	if hasImage == 1 {
		in.image = &memory.Image{Start: start, Size: size, MinBytes: minBytes, Data: rest[wasmLen:]}
	}
	return in, nil
}

// encodePrepared is the entry of in under key.
func encodePrepared(key [32]byte, in compileInput) []byte {
	var img memory.Image
	var hasImage byte
	if in.image != nil {
		img, hasImage = *in.image, 1
	}
	bodyLen := preparedFixedLen + len(in.wasm) + len(img.Data)
	b := make([]byte, preparedHeaderLen, preparedHeaderLen+bodyLen)
	copy(b, preparedMagic)
	copy(b[8:], key[:])
	b = binary.LittleEndian.AppendUint32(b, in.minPages)
	b = append(b, hasImage)
	b = binary.LittleEndian.AppendUint64(b, img.Start)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(img.Data)))
	b = binary.LittleEndian.AppendUint64(b, img.MinBytes)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(in.wasm)))
	b = append(b, in.wasm...)
	b = append(b, img.Data...)
	body := b[preparedHeaderLen:]
	binary.LittleEndian.PutUint32(b[40:44], crc32.Checksum(body, crc32c))
	binary.LittleEndian.PutUint64(b[44:52], uint64(len(body)))
	return b
}

// store writes in as the entry of key: a temporary file (0600), synced,
// then renamed into place, so that a reader sees the whole entry or none.
// An image whose bytes already moved to its backing is not stored.
func (c *preparedCache) store(key [32]byte, in compileInput) error {
	if in.image != nil && uint64(len(in.image.Data)) != in.image.Size {
		return errors.New("the image's bytes are not in memory")
	}
	// No directory fsync: a crash may lose the entry, which a cache can.
	return fsutil.WriteFile(c.path(key), encodePrepared(key, in), fsutil.PrivateFileMode, fsutil.Options{NoDirSync: true})
}
