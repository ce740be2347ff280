package testwasm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// ModulePath is the module whose root [RepoRoot] looks for.
const ModulePath = "github.com/stint-run/stint"

// CacheEnv names the environment variable that overrides the cache directory.
const CacheEnv = "STINT_TEST_CACHE"

// recipe is hashed into every output name; change it when the way guests
// are built changes, so older builds are not reused.
const recipe = "wasip1/wasm -trimpath -buildvcs=false CGO_ENABLED=0 v1"

// CacheDir returns the cache directory shared by all test processes
// ($STINT_TEST_CACHE, or stint-test-cache in the temporary directory),
// creating it if needed.
func CacheDir(tb testing.TB) string {
	tb.Helper()
	dir, err := cacheDir()
	if err != nil {
		tb.Fatalf("testwasm: %v", err)
	}
	return dir
}

func cacheDir() (string, error) {
	dir := os.Getenv(CacheEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "stint-test-cache")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the cache directory: %w", err)
	}
	return dir, nil
}

// CompileCacheDir returns <cache dir>/wazero-compile-cache, creating it if
// needed, for every test package to use as wazero's on-disk compilation
// cache (wazero.NewCompilationCacheWithDir).
func CompileCacheDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(CacheDir(tb), "wazero-compile-cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatalf("testwasm: creating the compilation cache directory: %v", err)
	}
	return dir
}

// DataDir returns a fresh data directory for a runner (a temporary
// directory of tb) whose compilation cache, its "cache" entry, links to
// [CompileCacheDir], so that Go guests compile once per machine.
func DataDir(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.Symlink(CompileCacheDir(tb), filepath.Join(dir, "cache")); err != nil {
		tb.Fatalf("testwasm: linking the data directory's cache: %v", err)
	}
	return dir
}

// RepoRoot returns the root of the repository: the nearest directory, from
// the working directory up, whose go.mod declares [ModulePath]. (Other
// go.mod files on the way, such as the benchmarks' own module, are skipped.)
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatalf("testwasm: %v", err)
	}
	root, err := findRoot(wd)
	if err != nil {
		tb.Fatalf("testwasm: %v", err)
	}
	return root
}

func findRoot(dir string) (string, error) {
	for d := dir; ; {
		if modulePath(filepath.Join(d, "go.mod")) == ModulePath {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod for %s above %s", ModulePath, dir)
		}
		d = parent
	}
}

// modulePath returns the module path declared in a go.mod file, or "".
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// builds serializes the builds of one output file within this process;
// other processes are handled by the atomic rename.
var builds sync.Map // output path -> *sync.Mutex

// GoGuest returns the path of ./wasm-examples/<name> built with GOOS=wasip1
// GOARCH=wasm, building it into the shared cache directory if it is not
// there yet. It never builds with -race (which wasip1 does not support),
// whatever GOFLAGS says. Safe for concurrent use, from several goroutines
// and several test processes.
func GoGuest(tb testing.TB, name string) string {
	tb.Helper()
	out, err := goGuest(name)
	if err != nil {
		tb.Fatalf("testwasm: %v", err)
	}
	return out
}

// GoPlugin is GoGuest for a plugin: ./wasm-examples/<name> built as a WASI
// reactor (-buildmode=c-shared), whose //go:wasmexport functions a
// sandbox.Plugin calls.
func GoPlugin(tb testing.TB, name string) string {
	tb.Helper()
	out, err := goBuild(name, "-buildmode=c-shared")
	if err != nil {
		tb.Fatalf("testwasm: %v", err)
	}
	return out
}

func goGuest(name string) (string, error) { return goBuild(name) }

func goBuild(name string, flags ...string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := findRoot(wd)
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "wasm-examples", name)
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("no guest %q: %s is not a directory", name, src)
	}
	goBin := goBinary()
	sum, err := sourceHash(root, name, goBin)
	if err != nil {
		return "", fmt.Errorf("hashing the sources of %s: %w", name, err)
	}
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	kind := "guest"
	if len(flags) > 0 {
		kind = "reactor" // the only other build: -buildmode=c-shared
	}
	out := filepath.Join(cache, fmt.Sprintf("%s-%s-%s.wasm", kind, name, sum[:16]))

	mu, _ := builds.LoadOrStore(out, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := build(root, name, goBin, out, flags...); err != nil {
		return "", fmt.Errorf("building guest %s: %w", name, err)
	}
	return out, nil
}

// goBinary returns the go command of the toolchain running the tests.
func goBinary() string {
	//lint:ignore SA1019 the toolchain that built the test binary is the one wanted here
	if goroot := runtime.GOROOT(); goroot != "" {
		p := filepath.Join(goroot, "bin", "go")
		if runtime.GOOS == "windows" {
			p += ".exe"
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}

// sourceHash hashes what a guest's build depends on in this repository: its
// own directory, the guest SDK (without tests), go.mod and go.sum, the Go
// version and the build recipe.
func sourceHash(root, name, goBin string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", recipe, runtime.Version(), goBin, name)
	files := []string{"go.mod", "go.sum"}
	for _, dir := range []string{filepath.Join("wasm-examples", name), "guest"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !d.Type().IsRegular() || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, rel)
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	slices.Sort(files)
	for _, rel := range files {
		f, err := os.Open(filepath.Join(root, rel))
		if errors.Is(err, fs.ErrNotExist) && (rel == "go.sum") {
			continue
		}
		if err != nil {
			return "", err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), fi.Size())
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// build runs go build into a private temporary directory beside out, then
// renames the result to out, so that readers never see a partial file and
// concurrent builders (identical output) simply replace each other.
func build(root, name, goBin, out string, flags ...string) error {
	tmpDir, err := os.MkdirTemp(filepath.Dir(out), ".build-"+name+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	tmp := filepath.Join(tmpDir, name+".wasm")

	env, err := buildEnv(goBin, root)
	if err != nil {
		return err
	}
	args := append([]string{"build", "-trimpath", "-buildvcs=false"}, flags...)
	cmd := exec.Command(goBin, append(args, "-o", tmp, "./wasm-examples/"+name)...)
	cmd.Dir = root
	cmd.Env = env
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v\n%s", err, output.Bytes())
	}
	return os.Rename(tmp, out)
}

// buildEnv returns the environment of the build: the test's own, set for
// wasip1/wasm, with -race removed from GOFLAGS (whether it comes from the
// environment or from go env -w).
func buildEnv(goBin, root string) ([]string, error) {
	goflags, ok := os.LookupEnv("GOFLAGS")
	if !ok {
		cmd := exec.Command(goBin, "env", "GOFLAGS")
		cmd.Dir = root
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go env GOFLAGS: %w", err)
		}
		goflags = strings.TrimSpace(string(b))
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(k) {
		case "GOOS", "GOARCH", "GOFLAGS", "CGO_ENABLED":
			return true
		}
		return false
	})
	return append(env, "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS="+withoutRace(goflags)), nil
}

// withoutRace removes the race flag from a GOFLAGS value.
func withoutRace(goflags string) string {
	var kept []string
	for _, f := range strings.Fields(goflags) {
		switch strings.TrimLeft(f, "-") {
		case "race", "race=true", "race=1", "race=false", "race=0":
			continue
		}
		kept = append(kept, f)
	}
	return strings.Join(kept, " ")
}
