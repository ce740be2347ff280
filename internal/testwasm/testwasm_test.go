package testwasm_test

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stint-run/stint/internal/testwasm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRepoRoot(t *testing.T) {
	t.Parallel()
	root := testwasm.RepoRoot(t)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	require.DirExists(t, filepath.Join(root, "wasm-examples"))

	// A nested module (like bench's) is skipped on the way up.
	nested := filepath.Join(root, "internal", "testwasm")
	got, err := testwasm.FindRoot(nested)
	require.NoError(t, err)
	require.Equal(t, root, got)

	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644))
	_, err = testwasm.FindRoot(other)
	require.Error(t, err)
}

func TestWithoutRace(t *testing.T) {
	t.Parallel()
	require.Equal(t, "", testwasm.WithoutRace("-race"))
	require.Equal(t, "-buildvcs=false -mod=mod", testwasm.WithoutRace(" -race -buildvcs=false --race=true -mod=mod"))
	require.Equal(t, "-tags=race", testwasm.WithoutRace("-tags=race"))
}

func TestSourceHash(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("go.mod", "module github.com/stint-run/stint\n")
	write("wasm-examples/a/main.go", "package main\n")
	write("wasm-examples/b/main.go", "package main\n")
	write("guest/guest.go", "package guest\n")

	hash := func() string {
		h, err := testwasm.SourceHash(root, "a", "go")
		require.NoError(t, err)
		return h
	}
	h0 := hash()
	require.Equal(t, h0, hash())

	write("guest/guest_test.go", "package guest\n") // tests do not matter
	write("wasm-examples/b/main.go", "package main // other guest\n")
	require.Equal(t, h0, hash())

	write("guest/guest.go", "package guest // edited\n")
	h1 := hash()
	require.NotEqual(t, h0, h1)

	write("wasm-examples/a/main.go", "package main // edited\n")
	h2 := hash()
	require.NotEqual(t, h1, h2)

	write("go.sum", "x\n")
	require.NotEqual(t, h2, hash())
}

func TestGoGuest(t *testing.T) {
	t.Setenv("GOFLAGS", "-race") // must not reach the guest build
	t.Setenv(testwasm.CacheEnv, t.TempDir())

	var wg sync.WaitGroup
	paths := make([]string, 4)
	errs := make([]error, len(paths))
	for i := range paths {
		wg.Go(func() { paths[i], errs[i] = testwasm.GoGuestErr("hello") })
	}
	wg.Wait()
	for i, p := range paths {
		require.NoError(t, errs[i])
		require.Equal(t, paths[0], p)
	}
	b, err := os.ReadFile(paths[0])
	require.NoError(t, err)
	require.Equal(t, []byte("\x00asm"), b[:4])
	require.Equal(t, os.Getenv(testwasm.CacheEnv), filepath.Dir(paths[0]))

	// The second call finds it.
	fi, err := os.Stat(paths[0])
	require.NoError(t, err)
	require.Equal(t, paths[0], testwasm.GoGuest(t, "hello"))
	fi2, err := os.Stat(paths[0])
	require.NoError(t, err)
	require.Equal(t, fi.ModTime(), fi2.ModTime())

	// No temporary build directory is left behind.
	entries, err := os.ReadDir(filepath.Dir(paths[0]))
	require.NoError(t, err)
	require.Len(t, entries, 1)

	_, err = testwasm.GoGuestErr("no_such_guest")
	require.ErrorContains(t, err, "no_such_guest")

	dir := testwasm.CompileCacheDir(t)
	require.DirExists(t, dir)
	require.Equal(t, "wazero-compile-cache", filepath.Base(dir))
}
