package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the in-process tests leave no goroutine behind.
// The tests that run the built binary are in e2e/.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
