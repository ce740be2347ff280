package batch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/internal/testwasm/wat"
)

// Run a module over a folder of text files: each output is the
// upper-cased input; a file that is not text fails with its stderr kept
// beside the outputs. Running the same Config again skips what is done.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "stint-batch-example")
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "texts"), filepath.Join(dir, "upper")
	_ = os.Mkdir(in, 0o755)
	for i := 1; i <= 3; i++ {
		_ = os.WriteFile(filepath.Join(in, fmt.Sprintf("note%d.txt", i)), fmt.Appendf(nil, "hello number %d\n", i), 0o644)
	}
	_ = os.WriteFile(filepath.Join(in, "blob.dat"), []byte("bin\x00ary"), 0o644)

	cfg := batch.Config{
		Module: wat.MustLoad("upper"), // a WASI command: stdin to stdout
		In:     in,
		Out:    out,
		Runner: stint.Config{Store: "sqlite:" + filepath.Join(dir, "stint.db")},
	}
	sum, err := batch.Run(ctx, cfg)
	var ie *batch.InputError
	switch {
	case errors.As(err, &ie): // nothing was written: a bad In, Out, module...
		fmt.Println("check failed:", err)
		return
	case errors.Is(err, batch.ErrStopped): // run cfg again to resume
	case err != nil:
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("%d inputs: %d succeeded, %d failed\n", sum.Total, sum.Succeeded, sum.Failed)
	for _, f := range sum.Failures {
		fmt.Printf("%s: %s: %s", filepath.Base(f.Input), f.Reason, f.StderrTail)
	}
	up, _ := os.ReadFile(filepath.Join(out, "note2.txt"))
	fmt.Print(string(up))

	// Again: the three that succeeded are skipped, blob.dat is tried again.
	sum, _ = batch.Run(ctx, cfg)
	fmt.Printf("again: %d already done, %d failed\n", sum.AlreadyDone, sum.Failed)
	// Output:
	// 4 inputs: 3 succeeded, 1 failed
	// blob.dat: exit code 1: upper: the input is not text (it holds a NUL byte)
	// HELLO NUMBER 2
	// again: 3 already done, 1 failed
}
