// Package guest is the Go SDK for Stint guest modules.
//
// A Stint task is any WASI preview 1 command: it reads its input on stdin,
// writes its result on stdout and its logs on stderr. A Go program becomes
// one when built with
//
//	GOOS=wasip1 GOARCH=wasm go build -o task.wasm .
//
// This package adds the optional `stint` host imports on top of that:
//
//   - [StopRequested] tells the guest that the runner wants it to stop
//     (shutdown, cancellation, or the attempt deadline is near);
//   - [SaveCheckpoint] stores a blob durably, and [LoadCheckpoint] returns the
//     blob the current attempt started with, so that a stopped or failed task
//     resumes where it left off instead of starting over;
//   - [Progress] reports how far the task has come;
//   - [Deadline] tells how long the attempt may still run.
//
// A module only imports the host functions it calls, so a guest that uses none
// of this package runs unchanged under Stint or any other WASI runtime.
//
// # Stopping cooperatively
//
// When the runner asks a task to stop, [StopRequested] starts returning true.
// The guest should then save a checkpoint and exit with [ExitInterrupted]
// (75, EX_TEMPFAIL), for example by calling [ExitStopped]. The runner records
// the attempt as interrupted (not failed, and not counted against the task's
// attempts) and the next attempt starts from the saved checkpoint. A guest
// that ignores the request is ended by force after a short grace period and
// resumes from its last saved checkpoint.
//
// # Example
//
//	func main() {
//		next := 0
//		if cp, ok := guest.LoadCheckpoint(); ok {
//			next, _ = strconv.Atoi(string(cp))
//		}
//		for ; next < 1_000_000; next++ {
//			if next%1000 == 0 && guest.StopRequested() {
//				if err := guest.SaveCheckpoint([]byte(strconv.Itoa(next))); err != nil {
//					fmt.Fprintln(os.Stderr, "checkpoint:", err)
//				}
//				guest.ExitStopped()
//			}
//			work(next)
//		}
//		fmt.Println("done")
//	}
//
// # On other platforms
//
// When built for any other target than wasip1 (for instance to run a guest's
// unit tests on the host), the imports are replaced by a stand-in host that
// never asks to stop, has no checkpoint to start from, accepts and discards
// every checkpoint, ignores progress and has no deadline. The wrappers in this
// package behave the same on every target.
package guest
