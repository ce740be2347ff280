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

	"github.com/stint-run/stint/internal/testutil"
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
	muted  bool
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

// openProxied opens a store on schema with opts, connected to the test
// database (connect_timeout 5 seconds) through a new proxy, and closes it
// when t ends.
func openProxied(t *testing.T, schema string, opts postgres.Options) (*postgres.Store, *proxy) {
	t.Helper()
	u, err := url.Parse(dsnWith(t, "connect_timeout", "5"))
	require.NoError(t, err)
	p := newProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	opts.Schema = schema
	s, err := postgres.Open(t.Context(), u.String(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, p
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
		p.wg.Go(func() { pipe(c, &muting{Conn: s, p: p}) })
	}
}

// muting reads what PostgreSQL answers, and drops it once the proxy is
// muted.
type muting struct {
	net.Conn
	p *proxy
}

func (m *muting) Read(b []byte) (int, error) {
	for {
		n, err := m.Conn.Read(b)
		m.p.mu.Lock()
		muted := m.p.muted
		m.p.mu.Unlock()
		if !muted || err != nil {
			return n, err
		}
	}
}

// cut closes every connection and refuses new ones.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down, p.muted = true, false
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
	s, p := openProxied(t, newSchema(t), postgres.Options{})
	ctx := t.Context()
	h := putModule(t, s)
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
	require.ErrorContains(t, err, "cannot reach "+p.ln.Addr().String())
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

// mute keeps forwarding what clients send but drops what PostgreSQL
// answers, from now on: a statement runs and commits, and its reply is
// lost.
func (p *proxy) mute() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.muted = true
}

// TestClaimReplyLost: a claim that PostgreSQL commits but whose reply is
// lost with the connection fails (ErrUnavailable), and leaves its task
// running under a lease nobody holds; the next Claim of that Store gives
// it back first and can take it again, as the same attempt number: no
// attempt recorded, no failure counted.
func TestClaimReplyLost(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	direct := open(t, schema, postgres.Options{})
	ctx := t.Context()
	// One connection, on which the claim's statements are prepared already
	// (an empty claim): the muted claim sends them without waiting for an
	// answer.
	s, p := openProxied(t, schema, postgres.Options{MaxConns: 1})
	cl, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "a", Max: 1, Lease: time.Hour})
	require.NoError(t, err)
	require.Empty(t, cl)
	h := putModule(t, direct)
	task, _, err := direct.Submit(ctx, tasks.Spec{Module: h, MaxAttempts: 1})
	require.NoError(t, err)

	p.mute()
	claimed := make(chan error, 1)
	go func() {
		_, err := s.Claim(ctx, tasks.ClaimRequest{Owner: "a", Max: 1, Lease: time.Hour})
		claimed <- err
	}()
	testutil.WaitFor(t, "the claim to commit", func() bool {
		got, err := direct.Get(ctx, task.ID)
		require.NoError(t, err)
		return got.State == tasks.StateRunning
	})
	p.cut()
	require.ErrorIs(t, <-claimed, postgres.ErrUnavailable)
	p.restore()

	cl, err = s.Claim(ctx, tasks.ClaimRequest{Owner: "a", Max: 1, Lease: time.Hour})
	require.NoError(t, err)
	require.Len(t, cl, 1, "the task the lost claim took is given back and claimed again")
	require.Equal(t, task.ID, cl[0].Task.ID)
	require.Equal(t, 1, cl[0].Lease.Token, "the same attempt: the lost one never started")
	require.Zero(t, cl[0].Task.Failures)
	atts, err := direct.Attempts(ctx, task.ID)
	require.NoError(t, err)
	require.Empty(t, atts)
	errs, err := s.Complete(ctx, []tasks.Completion{{Lease: cl[0].Lease, State: tasks.StateSucceeded}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
}
