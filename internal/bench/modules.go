package bench

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// testdata holds the benchmark's own modules, built from the .wat beside
// them by testdata/build.sh.
//
//go:embed testdata/*.wasm
var testdata embed.FS

// benchModule returns testdata/<name>.wasm.
func benchModule(name string) []byte {
	b, err := testdata.ReadFile("testdata/" + name + ".wasm")
	if err != nil {
		panic(err) // embedded: only a typo gets here
	}
	return b
}

// goGuest returns the bytes of the Go example guest wasm-examples/<name>:
// wasm-examples/build/<name>.wasm when `make wasm` built it, else a fresh
// build (GOOS=wasip1 GOARCH=wasm) into the cache directory.
func goGuest(o Options, name string) ([]byte, error) {
	if b, err := os.ReadFile(filepath.Join(o.RepoRoot, "wasm-examples", "build", name+".wasm")); err == nil {
		return b, nil
	}
	out := filepath.Join(o.CacheDir, "guests", name+".wasm")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	o.logf("building the Go guest %s (make wasm would have)", name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./wasm-examples/"+name)
	cmd.Dir = o.RepoRoot
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0", "GOFLAGS=")
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building guest %s: %v\n%s", name, err, msg.Bytes())
	}
	return os.ReadFile(out)
}
