// Package testutil holds helpers the tests of several packages share.
package testutil

import (
	"testing"
	"time"
)

// WaitTimeout is how long WaitFor waits before it calls a condition
// never met: long enough for a loaded machine running the tests with
// -race, never a duration a test relies on.
const WaitTimeout = 2 * time.Minute

// WaitFor waits until cond holds, checking it at once, then every
// millisecond at first and less often as the wait goes on (up to every
// 25 ms). If cond does not hold within WaitTimeout the test fails,
// saying what it waited for ("the task to start").
//
// Wait for the state a test is about (a task's state, a checkpoint in the
// store, a file in a folder), never for a duration. Where the code under
// test offers a channel or an event, wait on that instead; WaitFor is for
// what can only be read (another process's store, a folder, an HTTP
// endpoint). cond runs on the caller's goroutine, so it may call
// require's functions.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitFor(t, what, cond, WaitTimeout)
}

// WorkTimeout is how long WaitForWork waits: for a body of work (hundreds
// of tasks, tens of attempts) on a loaded machine, where WaitTimeout is
// for a state to come.
const WorkTimeout = 10 * time.Minute

// WaitForWork is WaitFor for a condition that holds once a body of work
// is done (every task of a chaos test succeeded), within WorkTimeout.
func WaitForWork(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitFor(t, what, cond, WorkTimeout)
}

func waitFor(t testing.TB, what string, cond func() bool, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	every := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
			return
		}
		time.Sleep(every)
		every = min(2*every, 25*time.Millisecond)
	}
}

// WaitClosed waits for ch to be closed (or to give a value), and fails t,
// saying what it waited for, if that has not happened within d.
func WaitClosed(t testing.TB, ch <-chan struct{}, what string, d time.Duration) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %s", what, d)
	}
}
