package sqlite

import "context"

// Pragmas exposes (*Store).pragmas to the tests.
func Pragmas(ctx context.Context, s *Store) (writer string, readers []string, err error) {
	return s.pragmas(ctx)
}
