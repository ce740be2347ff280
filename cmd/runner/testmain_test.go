package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the in-process tests leave no goroutine behind.
// The tests that run the built binary are in e2e/. The user's cache
// directory (runner run and call keep compiled modules there when there
// is no data_dir) is a temporary one, removed at the end.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stint-runner-usercache")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Setenv("XDG_CACHE_HOME", dir)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}
