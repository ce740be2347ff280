//go:build !wasip1

package guest_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/stint-run/stint/guest"
)

// A task that counts to a million in resumable steps. Built for wasip1 it runs
// under Stint; here, on the host, it runs against the stand-in host, which has
// no checkpoint and never asks to stop.
func Example() {
	next := 0
	if cp, ok := guest.LoadCheckpoint(); ok {
		next, _ = strconv.Atoi(string(cp))
	}
	sum := 0
	for ; next < 1_000_000; next++ {
		if next%1000 == 0 && guest.StopRequested() {
			if err := guest.SaveCheckpoint([]byte(strconv.Itoa(next))); err != nil {
				fmt.Fprintln(os.Stderr, "checkpoint:", err)
			}
			guest.ExitStopped()
		}
		sum += next % 7
	}
	fmt.Println("sum:", sum)
	// Output: sum: 2999997
}

func ExampleSaveCheckpoint() {
	err := guest.SaveCheckpoint([]byte("step 42"))
	switch {
	case errors.Is(err, guest.ErrLeaseLost):
		// Another attempt owns the task now: nothing this one does counts.
		os.Exit(1)
	case err != nil:
		// Not stored; the previous checkpoint is kept. Carry on.
		fmt.Fprintln(os.Stderr, "checkpoint:", err)
	}
	fmt.Println("saved")
	// Output: saved
}

func ExampleDeadline() {
	if left, ok := guest.Deadline(); ok {
		fmt.Println("time left:", left)
	} else {
		fmt.Println("no deadline")
	}
	// Output: no deadline
}
