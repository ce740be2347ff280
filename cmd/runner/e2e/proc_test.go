package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"encoding/json"
	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
)

// bound is how long a child process may take before a test calls it hung.
const bound = 120 * time.Second

// proc is a runner child process whose stderr is collected line by line.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	lines  []string
	update chan struct{} // closed and replaced on every new line
	done   chan struct{}
	err    error
}

func startRunner(t testing.TB, stdin io.Reader, args ...string) *proc {
	t.Helper()
	return startCmd(t, exec.Command(runnerBin, args...), stdin)
}

// startCmd starts cmd, a runner possibly behind a wrapper that execs it
// (prlimit), as startRunner does (with cmd.Env, if set, as its
// environment).
func startCmd(t testing.TB, cmd *exec.Cmd, stdin io.Reader) *proc {
	t.Helper()
	args := cmd.Args
	p, err := launch(cmd, stdin)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("runner %v stderr:\n%s", args, p.stderr())
		}
	})
	return p
}

// launch is startCmd without a test: it starts cmd and collects its
// stderr; the caller kills it and waits for done (a supervisor's
// goroutine, which may not fail a test).
func launch(cmd *exec.Cmd, stdin io.Reader) (*proc, error) {
	p := &proc{update: make(chan struct{}), done: make(chan struct{}), cmd: cmd}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	p.cmd.Env = append(env, "RUNNER_LOG_FORMAT=json")
	p.cmd.Stdin = stdin
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		testutil.AppendLines(stderr, &p.mu, &p.lines, &p.update)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitLine waits for a stderr line containing every one of subs.
func (p *proc) waitLine(t testing.TB, subs ...string) string {
	t.Helper()
	return p.waitMatch(t, fmt.Sprintf("a line with %q", subs), func(l string) bool { return containsAll(l, subs) })
}

// apiAddr waits for the runner's "HTTP API listening" line and returns
// the address it names.
func (p *proc) apiAddr(t testing.TB) string {
	t.Helper()
	var listening struct {
		Addr string `json:"addr"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.waitLine(t, "HTTP API listening")), &listening))
	return listening.Addr
}

// waitMatch waits for a stderr line for which match holds and returns it;
// what says what the test waits for. It wakes on every new line (no
// polling) and fails if the runner exits without writing one.
func (p *proc) waitMatch(t testing.TB, what string, match func(string) bool) string {
	t.Helper()
	l, got := waitItem(&p.mu, &p.lines, &p.update, p.done, match)
	switch {
	case got == itemEnded:
		t.Fatalf("runner exited (%v) before writing %s", p.err, what)
	case got == itemTimedOut:
		t.Fatalf("runner did not write %s within %s", what, bound)
	}
	return l
}

// What waitItem found.
const (
	itemFound = iota
	itemEnded
	itemTimedOut
)

// waitItem waits, for up to bound, for an item of *items (which grows
// under mu; *update is closed and replaced on every new item; done closes
// when nothing more comes) for which match holds. It sees every item once,
// in order, and wakes on every new one (no polling).
func waitItem[T any](mu *sync.Mutex, items *[]T, update *chan struct{}, done <-chan struct{}, match func(T) bool) (T, int) {
	timeout := time.After(bound)
	seen := 0
	for {
		mu.Lock()
		fresh, wake := (*items)[seen:], *update
		seen = len(*items)
		mu.Unlock()
		for _, x := range fresh {
			if match(x) {
				return x, itemFound
			}
		}
		var zero T
		select {
		case <-wake:
		case <-done:
			mu.Lock()
			rest := (*items)[seen:]
			mu.Unlock()
			for _, x := range rest {
				if match(x) {
					return x, itemFound
				}
			}
			return zero, itemEnded
		case <-timeout:
			return zero, itemTimedOut
		}
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(bound):
		t.Fatalf("runner did not exit within %s", bound)
	}
	return p.cmd.ProcessState.ExitCode()
}

// signal sends sig to the runner. A runner that has already exited (and
// been waited for) is left as it is: a test that signals once some state
// is reached may find the run over by then (a fast batch), and asserts
// its exit code and outputs anyway.
func (p *proc) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); !errors.Is(err, os.ErrProcessDone) {
		require.NoError(t, err)
	}
}

// stopCleanly sends the runner SIGTERM and requires it to exit 0. The
// failure message is why, when given, and then the runner's stderr (read
// once it has exited).
func (p *proc) stopCleanly(t testing.TB, why ...string) {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	code := p.wait(t)
	require.Equal(t, 0, code, strings.Join(append(why, p.stderr()), "\n"))
}

// kill sends the runner SIGKILL and waits for it to be gone (its exit
// code says only that it was killed).
func (p *proc) kill(t testing.TB) {
	t.Helper()
	p.signal(t, syscall.SIGKILL)
	p.wait(t)
}

// runRunner runs the binary to completion and returns stdout, stderr and
// the exit code.
func runRunner(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runRunnerWith(t, nil, stdin, args...)
}

// runExits runs the runner to completion with args (and no stdin) and
// requires exit code code and want in its stderr, which it returns.
func runExits(t *testing.T, code int, want string, args ...string) string {
	t.Helper()
	_, stderr, got := runRunner(t, "", args...)
	require.Equal(t, code, got, stderr)
	require.Contains(t, stderr, want)
	return stderr
}

// runJSON runs the runner to completion with stdin and args, requires
// exit code code, and returns what it printed on stdout decoded as a T.
func runJSON[T any](t *testing.T, code int, stdin string, args ...string) T {
	t.Helper()
	out, stderr, got := runRunner(t, stdin, args...)
	require.Equal(t, code, got, stderr)
	var v T
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}

// requireTimesOut runs the runner to completion with args and checks that
// its guest timed out: exit code 13 and outcome timed_out in its log,
// which it returns.
func requireTimesOut(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	_, stderr, code := runRunner(t, stdin, args...)
	require.Equal(t, 13, code, stderr)
	require.Contains(t, stderr, `"outcome":"timed_out"`)
	return stderr
}

// runRunnerWith is runRunner with more environment variables.
func runRunnerWith(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, runnerBin, args...)
	cmd.Env = append(append(os.Environ(), "RUNNER_LOG_FORMAT=json"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("runner %v: %v", args, err)
		}
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// The fixtures the end-to-end tests share (internal/testutil's
// ReadFile and TaskID, internal/testwasm's DataDir, internal/teststore's
// Open and Queue), by the names the tests use.
var (
	readFile      = testutil.ReadFile
	dataDir       = testwasm.DataDir
	openTestStore = teststore.Open
	queue         = teststore.Queue
	mustID        = testutil.TaskID
)

// ioPipe is an OS pipe whose write end the test holds open: the child's
// stdin never ends.
func ioPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}
