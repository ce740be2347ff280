package server_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stint-run/stint/server"
	"github.com/stretchr/testify/require"
)

// getOn sends GET /healthz on c and reads the response.
func getOn(c net.Conn, r *bufio.Reader) (*http.Response, error) {
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(r, nil)
	if err == nil {
		_ = resp.Body.Close()
	}
	return resp, err
}

// A client that opens many connections and sends nothing holds at most
// http.max_connections of the runner's descriptors; the next connection
// is served once one of them closes.
func TestMaxConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const limit = 4
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", MaxConnections: limit}, server.Deps{Store: newFakeStore()})
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(ctx)) })
	addr := srv.Addr()

	// limit keep-alive connections, each served once and then idle.
	held := make([]net.Conn, limit)
	for i := range held {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		resp, err := getOn(c, bufio.NewReader(c))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		held[i] = c
	}
	require.Equal(t, limit, server.OpenConns(srv))

	// Many more that send nothing: the kernel queues them, the server
	// does not accept them.
	for range 200 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break // the backlog is full: refused, which is fine too
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	require.Equal(t, limit, server.OpenConns(srv), "no connection past the limit was accepted")

	// One more with a request: not served while the limit is held (a
	// bounded wait for something that must not happen)...
	next, err := net.Dial("tcp", addr)
	if err != nil {
		t.Skipf("the listen backlog is full here: %v", err)
	}
	t.Cleanup(func() { _ = next.Close() })
	r := bufio.NewReader(next)
	require.NoError(t, next.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err = getOn(next, r)
	require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "served past the limit: %v", err)
	require.LessOrEqual(t, server.OpenConns(srv), limit)
}

// Once a held connection closes, a waiting one is served.
func TestMaxConnectionsFreed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", MaxConnections: 1}, server.Deps{Store: newFakeStore()})
	require.NoError(t, err)
	require.NoError(t, srv.Start(ctx))
	t.Cleanup(func() { require.NoError(t, srv.Shutdown(ctx)) })

	first, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	resp, err := getOn(first, bufio.NewReader(first))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	second, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = second.Close() })
	done := make(chan error, 1)
	go func() {
		resp, err := getOn(second, bufio.NewReader(second))
		if err == nil && resp.StatusCode != http.StatusOK {
			err = errors.New(resp.Status)
		}
		done <- err
	}()
	require.NoError(t, first.Close())
	require.NoError(t, <-done, "served once the first connection closed")
}
