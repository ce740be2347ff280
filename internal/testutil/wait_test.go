package testutil

import (
	"fmt"
	"testing"
	"time"
)

// TestWaitForReturnsOnceTheConditionHolds: WaitFor checks the condition
// until it holds, and no more.
func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	n := 0
	WaitFor(t, "the third check", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("checked %d times, want 3", n)
	}
}

// fatalT records what Fatalf says instead of ending the test.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}

func (f *fatalT) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// TestWaitForSaysWhatItWaitedFor: a condition that never holds fails the
// test with what the caller waited for.
func TestWaitForSaysWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	f := &fatalT{TB: t}
	waitFor(f, "the task to start", func() bool { return false }, 10*time.Millisecond)
	if want := "timed out after 10ms waiting for the task to start"; f.msg != want {
		t.Fatalf("got %q, want %q", f.msg, want)
	}
}
