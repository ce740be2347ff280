package e2e

import (
	"crypto/sha256"
	"encoding/hex"
)

// What the tests know of the runner from outside, as its users do: the
// documented exit codes, the JSON of runner batch --json and the names of
// the files a batch writes. The runner's own definitions are in package
// main (root.go, batch.go, batch_output.go, batch_summary.go); these are
// copies, so a change there that breaks the documented interface fails
// here.

// Exit codes (runner --help; docs/batch.md for a batch's).
const (
	exitUsage        = 2
	exitTaskDead     = 4
	exitBatchFailed  = 7
	exitBatchStopped = 75
)

// batchSummary is the summary runner batch --json prints.
type batchSummary struct {
	Module      string         `json:"module"`
	In          string         `json:"in"`
	Out         string         `json:"out"`
	Total       int            `json:"total"`
	Succeeded   int            `json:"succeeded"`
	AlreadyDone int            `json:"already_done"`
	Failed      int            `json:"failed"`
	Left        int            `json:"left"`
	Interrupted int            `json:"interrupted"`
	Stopped     bool           `json:"stopped"`
	Seconds     float64        `json:"seconds"`
	Rate        float64        `json:"files_per_second"`
	Failures    []batchFailure `json:"failures"`
	ExitCode    int            `json:"exit_code"`
}

// batchFailure is one input of batchSummary.Failures.
type batchFailure struct {
	Input      string `json:"input"`
	Outcome    string `json:"outcome"`
	ExitCode   int    `json:"exit_code,omitempty"`
	Reason     string `json:"reason,omitempty"`
	StderrFile string `json:"stderr_file,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
}

// stderrPrefix begins the path of a failed input's stderr file below the
// output folder (as readOut names it); tempPrefix begins the name of an
// output being written.
const (
	stderrPrefix = ".stint-batch/stderr/"
	tempPrefix   = ".stint-batch-"
)

// batchQueue is the queue of the batch writing to the folder out,
// batch-<hash of the folder> (docs/batch.md).
func batchQueue(out string) string {
	sum := sha256.Sum256([]byte(out))
	return "batch-" + hex.EncodeToString(sum[:6])
}
