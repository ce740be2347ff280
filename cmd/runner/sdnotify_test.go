package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/server"
)

// TestSDNotifyOffWithoutSocket: without NOTIFY_SOCKET runner serve tells
// systemd nothing and runs no watchdog loop, whatever WATCHDOG_USEC says.
func TestSDNotifyOffWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "1000")
	n := newSDNotify(zap.NewNop())
	n.send = func(state string) (bool, error) {
		t.Errorf("sent %q without NOTIFY_SOCKET", state)
		return false, nil
	}
	require.Zero(t, n.watchdog)
	n.ready()
	n.status("x")
	n.stopping()
	n.watch(func(context.Context) error { t.Error("a health check without a watchdog"); return nil })()
}

// TestSDNotifyWatchdogInterval: WATCHDOG_USEC is the interval; no
// watchdog without it, or when WATCHDOG_PID names another process, or
// when it is not a number.
func TestSDNotifyWatchdogInterval(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "notify"))
	for _, c := range []struct {
		usec, pid string
		want      time.Duration
	}{
		{"", "", 0},
		{"30000000", "", 30 * time.Second},
		{"30000000", strconv.Itoa(os.Getpid()), 30 * time.Second},
		{"30000000", strconv.Itoa(os.Getpid() + 1), 0},
		{"soon", "", 0},
	} {
		t.Setenv("WATCHDOG_USEC", c.usec)
		t.Setenv("WATCHDOG_PID", c.pid)
		require.Equal(t, c.want, newSDNotify(zap.NewNop()).watchdog, "WATCHDOG_USEC=%q WATCHDOG_PID=%q", c.usec, c.pid)
	}
}

// TestSDNotifyWatchdogPingsOnlyWhenHealthy: every WATCHDOG=1 follows a
// health check that passed, on the same loop; a check that fails or does
// not return within its time sends none, and pings resume once checks
// pass again. The loop is observed through one channel, in its own order.
func TestSDNotifyWatchdogPingsOnlyWhenHealthy(t *testing.T) {
	seen := make(chan string, 256)
	n := &sdNotify{log: zap.NewNop(), on: true, watchdog: 20 * time.Millisecond,
		send: func(state string) (bool, error) { seen <- state; return true, nil }}
	const (
		healthy = iota
		failing
		hanging
	)
	var mode atomic.Int32
	stop := n.watch(func(ctx context.Context) error {
		switch mode.Load() {
		case failing:
			seen <- "check failed"
			return errors.New("unhealthy")
		case hanging:
			<-ctx.Done() // a check that does not return in time
			seen <- "check timed out"
			return ctx.Err()
		}
		seen <- "check passed"
		return nil
	})
	defer stop()
	last := ""
	next := func() string {
		t.Helper()
		select {
		case s := <-seen:
			if s == "WATCHDOG=1" {
				require.Equal(t, "check passed", last, "a ping after %q", last)
			}
			last = s
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("the watchdog loop stopped")
			return ""
		}
	}
	// waitPings waits for k pings; nothing else than passed checks and
	// pings may come meanwhile once the mode is healthy.
	waitPings := func(k int) {
		t.Helper()
		for got := 0; got < k; {
			if next() == "WATCHDOG=1" {
				got++
			}
		}
	}
	// noPings: k checks of the mode's kind in a row, none followed by a ping.
	noPings := func(kind string, k int) {
		t.Helper()
		for got := 0; got < k; {
			switch s := next(); s {
			case kind:
				got++
			case "WATCHDOG=1", "check passed":
				got = 0 // from before the mode changed
			default:
				t.Fatalf("unexpected %q", s)
			}
		}
	}
	waitPings(3)
	mode.Store(failing)
	noPings("check failed", 3)
	mode.Store(healthy)
	waitPings(2)
	mode.Store(hanging)
	noPings("check timed out", 3)
	mode.Store(healthy)
	waitPings(2)
}

// TestHealthProbe: the watchdog's check is GET /healthz served in process
// by the API's handler: 200 passes, anything else fails, and a handler
// that does not answer fails at the check's deadline and fails the next
// checks at once until it returns. The real API's handler passes.
func TestHealthProbe(t *testing.T) {
	ctx := context.Background()
	var p healthProbe
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	require.NoError(t, p.check(ctx, ok))
	err := p.check(ctx, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	require.ErrorContains(t, err, "answered 503")

	release := make(chan struct{})
	entered := make(chan struct{})
	hung := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { close(entered); <-release })
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, p.check(short, hung), "did not answer")
	<-entered
	require.ErrorContains(t, p.check(ctx, ok), "has not returned yet")
	close(release)
	require.Eventually(t, func() bool { return p.check(ctx, ok) == nil }, 10*time.Second, time.Millisecond)

	// The API's own handler, with a token (/healthz needs none) and without.
	for _, token := range []string{"", "secret"} {
		srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Token: token, Logger: zap.NewNop()},
			server.Deps{Store: teststore.Open(t, t.TempDir())})
		require.NoError(t, err)
		require.NoError(t, p.check(ctx, srv.Handler()), "token %q", token)
	}
}

// TestServeNotifiesSystemd: runner serve, in process, under a
// NOTIFY_SOCKET with a 200 ms watchdog: READY=1 (with its STATUS) once it
// serves, WATCHDOG=1 every 100 ms or so, and STOPPING=1 when its stop
// begins; it exits 0.
func TestServeNotifiesSystemd(t *testing.T) {
	dir, err := os.MkdirTemp("", "sdnotify") // short: a socket's name has at most 107 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sockPath := filepath.Join(dir, "notify")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Skipf("no unixgram socket here: %v", err)
	}
	defer sock.Close()
	t.Setenv("NOTIFY_SOCKET", sockPath)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", "")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer // written by serve while the test may read it
	exited := make(chan error, 1)
	go func() {
		exited <- run(ctx, []string{"serve", "--data-dir", testwasm.DataDir(t), "--http-addr", "127.0.0.1:0", "--workers", "1"},
			strings.NewReader(""), &bytes.Buffer{}, &stderr)
	}()
	msgs := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := sock.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case err := <-exited:
			t.Fatalf("runner serve exited (%v) before %s:\n%s", err, what, stderr.String())
		case <-time.After(time.Minute):
			t.Fatalf("no %s within a minute:\n%s", what, stderr.String())
		}
		return ""
	}
	require.Equal(t, "READY=1\nSTATUS=serving", next("READY=1"))
	for range 3 {
		require.Equal(t, "WATCHDOG=1", next("WATCHDOG=1"))
	}
	cancel() // the phased stop, as on SIGTERM
	for {
		m := next("STOPPING=1")
		if m == "WATCHDOG=1" { // pings go on while it stops
			continue
		}
		require.Equal(t, "STOPPING=1\nSTATUS=stopping in phases (docs/shutdown.md)", m)
		break
	}
	select {
	case err := <-exited:
		require.NoError(t, err, stderr.String())
	case <-time.After(time.Minute):
		t.Fatalf("runner serve did not exit within a minute of its stop:\n%s", stderr.String())
	}
	require.NoError(t, sock.Close())
	for range msgs { // the reader's end
	}
}

// lockedBuffer is a bytes.Buffer safe for one writer and one reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
