package batch

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/internal/termsafe"
)

// batchInput is one input file of a batch and what became of it.
type batchInput struct {
	// name is the file's base name in dir.
	name string
	// listed is its path as listed (--in's folder joined with the path
	// below it, the glob's match, the line of --files-from): {} of a
	// template.
	listed string
	// rel is its path below --in's folder or the glob's fixed part (its
	// name for --files-from's absolute paths): the default output name.
	rel string
	// out is its output's path below Out (Config.OutputName applied to
	// it); a failure's stderr is written to StderrDir/out.
	out string
	// seq is its sequence number, from 1 in the order listed: {#}.
	seq int
	// args are the guest's arguments for it (Spec.Args, templates
	// applied).
	args []string
	// dir is the folder it is in, open: the file is opened relative to it
	// (inputDir.openInput).
	dir *inputDir
	// path is the file's absolute path (part of the idempotency key).
	path string
	size int64
	// perm is the mode its output and its stderr file are created with (less
	// the umask): the input's permission bits & 0666, from the fstat of
	// the file the batch read; 0600 until it was read.
	perm fs.FileMode
	// sha is the sha256 of its content when it was submitted: its
	// attempts check the file against it (inputFor) unless data holds it.
	sha [32]byte
	// data is the content the batch read and hashed, held until its task
	// ends so that its attempts need not read the file again (nil when
	// the batch's budget for held inputs, Config.HoldBytes, was spent).
	data []byte
	// id is its task (0 until submitted).
	id int64
}

// outputPerm is the mode of the output of an input whose mode is mode:
// never wider than the input's, never executable or special.
func outputPerm(mode fs.FileMode) fs.FileMode { return mode.Perm() & 0o666 }

// checkInputSizes refuses inputs over limits.max_input before any work.
func checkInputSizes(inputs []*batchInput, max int64) error {
	if max <= 0 {
		return nil
	}
	var big []string
	for _, in := range inputs {
		if in.size > max {
			big = append(big, fmt.Sprintf("%s (%s)", termsafe.String(in.path), bytesize.Format(in.size)))
		}
	}
	if len(big) == 0 {
		return nil
	}
	n, more := len(big), ""
	if len(big) > 5 {
		more = fmt.Sprintf(" and %d more", len(big)-5)
		big = big[:5]
	}
	return inputErrorf("%d inputs are larger than limits.max_input (%s): %s%s; raise limits.max_input (--limits-max-input) or leave them out",
		n, bytesize.Format(max), strings.Join(big, ", "), more)
}

// batchKey is an input's idempotency key: the queue (so the output
// folder), the module's sha256, the input's path and sha256, and what else
// changes the output (args, env). The same command over the same files
// finds the same tasks; a changed file, module or argument is a new task.
func batchKey(queue, module, path string, inputSHA [32]byte, args []string, env map[string]string) string {
	h := sha256.New()
	for _, s := range []string{queue, module, path, hex.EncodeToString(inputSHA[:])} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, a := range args {
		h.Write([]byte("arg\x00" + a + "\x00"))
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		h.Write([]byte("env\x00" + k + "=" + env[k] + "\x00"))
	}
	return "batch:" + hex.EncodeToString(h.Sum(nil))
}
