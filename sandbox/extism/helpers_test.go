package extism_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/sandbox"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// bound is how long a test waits for what must happen before it fails.
const bound = 30 * time.Second

func newRuntime(t *testing.T, cfg sandbox.Config) *sandbox.Runtime {
	t.Helper()
	if cfg.CompileTimeout == 0 {
		cfg.CompileTimeout = 10 * time.Minute // a Go plugin under -race on a loaded machine (sandbox's newRuntime)
	}
	rt, err := sandbox.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close(context.Background())) })
	return rt
}

// call calls fn and fails the test if the call has not returned within
// bound.
func call(t *testing.T, p *sandbox.Plugin, fn, input string, opts sandbox.CallOptions) *sandbox.Outcome {
	t.Helper()
	done := make(chan *sandbox.Outcome, 1)
	errs := make(chan error, 1)
	go func() {
		out, err := p.CallWith(context.Background(), fn, []byte(input), opts)
		errs <- err
		done <- out
	}()
	select {
	case err := <-errs:
		require.NoError(t, err)
		return <-done
	case <-time.After(bound):
		t.Fatalf("call of %s did not return within %s", fn, bound)
		return nil
	}
}

// waitFor waits for ch to close, within bound.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	testutil.WaitClosed(t, ch, what, bound)
}

// newLogWatch is testutil.NewLogWatch: a logger whose entries tests can
// wait for.
var newLogWatch = testutil.NewLogWatch
