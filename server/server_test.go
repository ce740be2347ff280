package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// httpClient returns a client with a transport of its own, whose idle
// connections are closed when the test ends (for goleak).
func httpClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func TestStartShutdown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0"}, server.Deps{Store: newFakeStore()})
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:0", srv.Addr())
	require.NoError(t, srv.Start(ctx))
	require.NoError(t, srv.Start(ctx), "a second Start does nothing")
	addr := srv.Addr()
	require.NotEqual(t, "127.0.0.1:0", addr)

	c := httpClient(t)
	resp, err := c.Get("http://" + addr + "/healthz")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok", string(body))

	require.NoError(t, srv.Shutdown(ctx))
	require.NoError(t, srv.Shutdown(ctx), "a second Shutdown returns the first's result")
	_, err = c.Get("http://" + addr + "/healthz")
	require.Error(t, err, "no longer listening")
	require.ErrorIs(t, srv.Start(ctx), http.ErrServerClosed)
}

func TestShutdownBeforeStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0"}, server.Deps{Store: newFakeStore()})
	require.NoError(t, err)
	require.NoError(t, srv.Shutdown(ctx))
	require.NoError(t, srv.Shutdown(ctx))
	require.ErrorIs(t, srv.Start(ctx), http.ErrServerClosed)
}

func TestStartPortTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	srv, err := server.New(server.Config{Addr: ln.Addr().String()}, server.Deps{Store: newFakeStore()})
	require.NoError(t, err)
	err = srv.Start(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), "listen on "+ln.Addr().String())
	require.Contains(t, err.Error(), "already in use")
	require.NoError(t, srv.Shutdown(context.Background()))
}

func TestStartBadAddr(t *testing.T) {
	t.Parallel()
	srv, err := server.New(server.Config{Addr: "127.0.0.1:notaport"}, server.Deps{Store: newFakeStore()})
	require.NoError(t, err)
	require.ErrorContains(t, srv.Start(context.Background()), "listen on 127.0.0.1:notaport")
}

// A request in progress finishes during Shutdown; the server then stops.
func TestShutdownWaitsForRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	entered, release := make(chan struct{}), make(chan struct{})
	store := newFakeStore()
	srv := startHeldServer(t, store, entered, release)
	sum, err := store.PutModule(ctx, noop)
	require.NoError(t, err)

	c := httpClient(t)
	type result struct {
		code int
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := c.Post("http://"+srv.Addr()+"/v1/tasks", "application/json", stringsReader(`{"module":"`+sum+`"}`))
		if err != nil {
			got <- result{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		got <- result{code: resp.StatusCode}
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Shutdown(ctx) }()
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned while a request was in progress: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	r := <-got
	require.NoError(t, r.err)
	require.Equal(t, http.StatusCreated, r.code)
	require.NoError(t, <-stopped)
}

// Shutdown with a context that ends closes the connections left and
// returns the context's error.
func TestShutdownDeadline(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	srv := startHeldServer(t, newFakeStore(), entered, release)
	c := httpClient(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := c.Post("http://"+srv.Addr()+"/v1/tasks", "application/json", stringsReader(`{"module":"`+strings.Repeat("ab", 32)+`"}`))
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := srv.Shutdown(ctx)
	require.ErrorIs(t, err, context.Canceled)
	<-done
}

// startHeldServer starts a server on a loopback port over store whose
// task submissions close entered, then wait for release to be closed
// before they reach the store.
func startHeldServer(t *testing.T, store *fakeStore, entered, release chan struct{}) *server.Server {
	t.Helper()
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0"}, server.Deps{
		Store: store,
		Submit: func(ctx context.Context, spec tasks.Spec) (tasks.Task, bool, error) {
			close(entered)
			<-release
			return store.Submit(ctx, spec)
		},
	})
	require.NoError(t, err)
	require.NoError(t, srv.Start(context.Background()))
	return srv
}
