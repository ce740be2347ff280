// Package e2e holds the end-to-end tests of cmd/runner: each runs the real
// runner binary, built once by TestMain with -tags stint_testhooks
// (../testhooks_on.go), as a child process, and checks what a user sees of
// it: its output, exit codes, files, store and signals. They know the
// runner only from outside (runner_test.go: the exit codes and JSON they
// rely on); the tests that call package main in process are in
// cmd/runner.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// runnerBin is the real runner binary, built once for the tests that run it
// as a child process (signals, crashes). It is built without -race so Go
// guests compile at their normal speed.
var runnerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stint-runner-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runnerBin = filepath.Join(dir, "runner")
	if err := keepGoBuildCache(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The user's cache directory of the runners the tests start (runner
	// run and call keep compiled modules there without a data_dir): a
	// temporary one, not the user's.
	_ = os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "usercache"))
	if out, err := buildRunner(runnerBin); err != nil {
		fmt.Fprintf(os.Stderr, "building runner: %v\n%s", err, out)
		os.Exit(1)
	}
	code := 0
	func() {
		defer func() { _ = os.RemoveAll(dir) }()
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		code = m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
			}
		}
	}()
	os.Exit(code)
}

// keepGoBuildCache sets GOCACHE to Go's build cache as it is before
// TestMain points XDG_CACHE_HOME elsewhere: Go's default cache is below
// it, and in an empty one the go commands of the tests (the runner's
// builds, testwasm's builds of Go guests) compiled every package again on
// every run (minutes).
func keepGoBuildCache() error {
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		return fmt.Errorf("go env GOCACHE: %w", err)
	}
	return os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
}

// buildRunner builds the runner with the test hooks (-tags
// stint_testhooks: testhooks_on.go) into out, for the platform that env
// names (GOOS=, GOARCH=; none: this one), and returns the go command's
// output. -trimpath keeps the checkout's path out of what is compiled, so
// that Go's build cache serves the packages to any checkout of the same
// sources (CI's fresh clone of what a developer ran included) instead of
// compiling them all again.
func buildRunner(out string, env ...string) ([]byte, error) {
	build := exec.Command("go", "build", "-trimpath", "-tags", "stint_testhooks", "-o", out, "github.com/stint-run/stint/cmd/runner")
	build.Env = append(append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0"), env...)
	return build.CombinedOutput()
}
