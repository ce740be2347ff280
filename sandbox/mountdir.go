package sandbox

import (
	"io/fs"
	"os"
)

// stat is what Spec.Validate checks of a mount: its open directory when
// it has one (Mount.Dir), never a path the caller did not check.
func (m Mount) stat() (fs.FileInfo, error) {
	if m.Dir != nil {
		return m.Dir.Stat()
	}
	return os.Stat(m.HostPath)
}
