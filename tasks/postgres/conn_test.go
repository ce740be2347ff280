package postgres_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
)

// proxy forwards TCP connections to PostgreSQL until cut: then it closes
// every connection it carries and refuses new ones (accepts and closes
// them), as a database that went away would, until restored.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			_ = c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		pipe := func(dst, src net.Conn) {
			_, _ = io.Copy(dst, src)
			_ = dst.Close()
			_ = src.Close()
		}
		p.wg.Go(func() { pipe(s, c) })
		p.wg.Go(func() { pipe(c, s) })
	}
}

// cut closes every connection and refuses new ones.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// restore accepts connections again.
func (p *proxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// TestConnectionLoss: while PostgreSQL is unreachable every call fails
// with an error wrapping ErrUnavailable and the driver's error, Ping
// included; once it is back the store works again on new connections, and
// an attempt whose lease held meanwhile records its result.
func TestConnectionLoss(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	u, err := url.Parse(dsnWith(t, "connect_timeout", "5"))
	require.NoError(t, err)
	p := newProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	s, err := postgres.Open(t.Context(), u.String(), postgres.Options{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	h, err := s.PutModule(ctx, wasm)
	require.NoError(t, err)
	task, _, err := s.Submit(ctx, tasks.Spec{Module: h})
	require.NoError(t, err)
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "a", Max: 1, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 1)
	require.NoError(t, s.Ping(ctx))

	p.cut()
	_, err = s.Get(ctx, task.ID)
	t.Log(err)
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	require.ErrorContains(t, err, "cannot reach "+u.Host)
	require.NotErrorIs(t, err, tasks.ErrNotFound)
	require.True(t, driverError(err), "the driver's error is wrapped too")
	err = s.Ping(ctx)
	t.Log(err)
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	done := tasks.Completion{Lease: cl[0].Lease, State: tasks.StateSucceeded, Result: []byte("ok"),
		Attempt: tasks.Attempt{Outcome: "succeeded"}}
	errs, err := s.Complete(ctx, []tasks.Completion{done})
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	require.ErrorIs(t, errs[0], postgres.ErrUnavailable)
	_, err = s.Claim(ctx, tasks.ClaimRequest{Owner: "a", Max: 1, Lease: time.Hour})
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	_, _, err = s.Heartbeat(ctx, []tasks.Lease{cl[0].Lease}, time.Hour)
	require.ErrorIs(t, err, postgres.ErrUnavailable)

	// Back: each failed call let go of a dead connection; a readiness probe
	// turns true once the pool has a live one.
	p.restore()
	for i := 0; s.Ping(ctx) != nil; i++ {
		require.Less(t, i, 10, "the store does not come back")
	}
	errs, err = s.Complete(ctx, []tasks.Completion{done})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	got, err := s.Get(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, got.State)
	require.Equal(t, []byte("ok"), got.Result)
}

// driverError reports whether err wraps an error of the driver or the
// network under it.
func driverError(err error) bool {
	var netErr net.Error
	var connErr *pgconn.ConnectError
	var pgErr *pgconn.PgError
	return errors.As(err, &netErr) || errors.As(err, &connErr) || errors.As(err, &pgErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// TestOpenUnreachable: Open says which database it could not reach.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	_, err = postgres.Open(t.Context(), "postgres://stint@"+addr+"/nowhere?connect_timeout=5", postgres.Options{})
	t.Log(err)
	require.ErrorIs(t, err, postgres.ErrUnavailable)
	require.ErrorContains(t, err, addr+"/nowhere")
	require.True(t, driverError(err))
}
