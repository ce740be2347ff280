//go:build !linux

package sqlite

// openSender is a no-op off Linux: runners find new tasks by polling.
func openSender(string) (func(), func() error) { return func() {}, func() error { return nil } }

// ListenWakeups returns a channel that never gets a value off Linux (there
// is no abstract socket namespace): runners find new tasks by polling.
func (s *Store) ListenWakeups() (<-chan struct{}, func() error, error) {
	return nil, func() error { return nil }, nil
}
