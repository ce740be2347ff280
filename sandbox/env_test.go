package sandbox_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
)

// bigEnv is n variables of about 15 bytes each.
func bigEnv(n int) map[string]string {
	env := make(map[string]string, n)
	for i := range n {
		env["VAR_"+strconv.Itoa(i)] = "value"
	}
	return env
}

// BenchmarkRunEnv runs a guest that reads its whole environment, with n
// variables: the environment is built once per run, in time linear in
// its size.
func BenchmarkRunEnv(b *testing.B) {
	rt, err := sandbox.New(context.Background(), sandbox.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(context.Background())
	mod, err := rt.Compile(context.Background(), wat.MustLoad("args_env"))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{0, 1000, 10_000, 40_000} {
		env := bigEnv(n)
		b.Run(fmt.Sprintf("vars=%d", n), func(b *testing.B) {
			for b.Loop() {
				out, err := rt.Run(context.Background(), mod, sandbox.Spec{Env: env})
				if err != nil || out.Kind != sandbox.KindSucceeded {
					b.Fatal(err, out)
				}
			}
		})
	}
}

// TestEnvHuge: 200,000 variables (3 MB) reach the guest whole, and a run
// whose deadline passes while its environment is built ends timed_out
// without starting its guest (the build is under the run's watch).
func TestEnvHuge(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "args_env")
	env := bigEnv(200_000)

	out := run(t, rt, context.Background(), mod, sandbox.Spec{Env: env, Limits: sandbox.Limits{MaxStdout: 16 << 20}})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	lines := strings.Split(strings.TrimSuffix(string(out.Stdout), "\n"), "\n")
	require.Len(t, lines, 1+200_000) // argv[0], then the environment
	require.Equal(t, "VAR_0=value", lines[1], "sorted by key")
	require.Equal(t, "VAR_99999=value", lines[len(lines)-1])

	// Its attempt began an hour ago: the deadline has passed when Run
	// starts, and the environment's build sees it.
	out = run(t, rt, context.Background(), mod, sandbox.Spec{Env: env,
		Limits: sandbox.Limits{Timeout: time.Second}, Started: time.Now().Add(-time.Hour)})
	require.Equal(t, sandbox.KindTimedOut, out.Kind, out.String())
	require.True(t, out.Deadline)
	require.Empty(t, out.Stdout, "the guest never started")
}

// TestEnvRefusesNUL: a value with a NUL is an invalid spec (WASI's
// entries are NUL-terminated), as a key with '=' is.
func TestEnvRefusesNUL(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	mod := compile(t, rt, "args_env")
	_, err := rt.Run(context.Background(), mod, sandbox.Spec{Env: map[string]string{"A": "x\x00y"}})
	require.ErrorContains(t, err, "invalid spec")
	require.ErrorContains(t, err, "NUL")
}
