package server

import (
	"net"
	"sync"
)

// limitListener accepts at most n connections open at once
// (Config.MaxConnections). Past it, Accept waits for one to close; the
// kernel queues the new connections meanwhile (its listen backlog), and
// refuses them past that. Every open connection is a descriptor and a
// goroutine: a client that opens thousands and sends nothing must not
// exhaust the runner's descriptors (its store, its mounts' files).
// golang.org/x/net/netutil.LimitListener does the same; it is not in this
// module's graph.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// newLimitListener limits ln to n open connections.
func newLimitListener(ln net.Listener, n int) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close closes the listener and ends an Accept waiting for a slot.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// open is how many accepted connections are open.
func (l *limitListener) open() int { return len(l.sem) }

// limitConn gives its slot back when it is closed, once.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
