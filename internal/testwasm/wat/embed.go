package wat

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// FS holds the compiled fixtures, as name.wasm at its root.
//
//go:embed *.wasm
var FS embed.FS

// Load returns the bytes of the fixture name ("noop" or "noop.wasm").
func Load(name string) ([]byte, error) {
	if !strings.HasSuffix(name, ".wasm") {
		name += ".wasm"
	}
	b, err := FS.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("wat: fixture %q: %w", name, err)
	}
	return b, nil
}

// MustLoad is like [Load] but panics if there is no such fixture; for tests.
func MustLoad(name string) []byte {
	b, err := Load(name)
	if err != nil {
		panic(err)
	}
	return b
}

// Names returns the names of all fixtures, without ".wasm", sorted.
func Names() []string {
	matches, err := fs.Glob(FS, "*.wasm")
	if err != nil {
		panic(err) // only for a malformed pattern
	}
	names := make([]string, len(matches))
	for i, m := range matches {
		names[i] = strings.TrimSuffix(m, ".wasm")
	}
	return names
}
