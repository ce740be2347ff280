package e2e

import (
	"path/filepath"
	"regexp"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testwasm"
)

// TestVersionJSON: the real binary reports the Go version that built it
// and the wazero version of go.mod, from its build information.
func TestVersionJSON(t *testing.T) {
	t.Parallel()
	gomod := string(readFile(t, filepath.Join(testwasm.RepoRoot(t), "go.mod")))
	want := regexp.MustCompile(`github.com/tetratelabs/wazero (v\S+)`).FindStringSubmatch(gomod)
	require.NotNil(t, want, "no wazero in go.mod")
	type versionInfo struct {
		Version, Revision, Go, Wazero string
	}
	vi := runJSON[versionInfo](t, 0, "", "version", "--json")
	require.Equal(t, want[1], vi.Wazero)
	require.Equal(t, runtime.Version(), vi.Go)
	require.NotEmpty(t, vi.Version)
	if vi.Revision != "" {
		require.Regexp(t, `^[0-9a-f]{40}$`, vi.Revision)
	}
	out, _, code := runRunner(t, "", "version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "wazero  "+want[1])
}

// TestEmptyHTTPAddrVariableMeansNoHTTP: RUNNER_HTTP_ADDR= runner serve
// starts without the API, as the docs say.
func TestEmptyHTTPAddrVariableMeansNoHTTP(t *testing.T) {
	t.Setenv("RUNNER_HTTP_ADDR", "")
	p := startRunner(t, nil, "serve", "--data-dir", dataDir(t), "--workers", "1")
	p.waitLine(t, "runner ready")
	p.stopCleanly(t)
	require.NotContains(t, p.stderr(), "HTTP API listening")
}
