package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDiagFiles: STINT_TRACE and STINT_CPUPROFILE write a Go execution
// trace and a CPU profile to the file they name, %p replaced by the
// process id; unset, nothing is written.
func TestDiagFiles(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(traceEnv, filepath.Join(dir, "trace-%p.out"))
	t.Setenv(cpuProfileEnv, filepath.Join(dir, "cpu-%p.pprof"))
	stopTrace := startTrace()
	stopProfile := startCPUProfile()
	stopProfile()
	stopTrace()
	pid := strconv.Itoa(os.Getpid())
	tr, err := os.ReadFile(filepath.Join(dir, "trace-"+pid+".out"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(tr), "go 1."), "a Go execution trace starts with its version")
	info, err := os.Stat(filepath.Join(dir, "cpu-"+pid+".pprof"))
	require.NoError(t, err)
	require.Positive(t, info.Size())

	t.Setenv(traceEnv, "")
	startTrace()()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2)
}
