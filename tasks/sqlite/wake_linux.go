//go:build linux

package sqlite

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// openSender returns a func that sends one byte to the abstract socket
// name, ignoring every error (no listener is the common case), and one
// that closes its socket.
func openSender(name string) (func(), func() error) {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Net: "unixgram"}) // autobind: an anonymous sender
	if err != nil {
		return func() {}, func() error { return nil }
	}
	addr := &net.UnixAddr{Name: "@" + name, Net: "unixgram"}
	return func() { _, _ = conn.WriteToUnix([]byte{1}, addr) }, conn.Close
}

// ListenWakeups listens for the wake-ups Submit and Retry send from any
// process that opens this store file, and returns a channel that gets a
// value (coalesced) after each, and a func that stops listening. Only one
// listener per store file can exist on a machine: a second gets an error
// (as a second `runner serve` on one data directory would).
func (s *Store) ListenWakeups() (<-chan struct{}, func() error, error) {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: "@" + s.wake.name, Net: "unixgram"})
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, fmt.Errorf("sqlite: listen for wake-ups of %s: another process already listens: %w", s.path, err)
		}
		return nil, nil, fmt.Errorf("sqlite: listen for wake-ups of %s: %w", s.path, err)
	}
	ch := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 16)
		for {
			if _, _, err := conn.ReadFromUnix(buf); err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			select {
			case ch <- struct{}{}:
			default: // one pending wake-up is enough
			}
		}
	}()
	return ch, conn.Close, nil
}
