//go:build !unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
)

// lockFile is not implemented off Unix: Exclusive fails rather than
// silently letting two runners share one store.
func lockFile(path, store string) (*os.File, error) {
	return nil, fmt.Errorf("sqlite: exclusive lock on %s: %w", path, errors.ErrUnsupported)
}
