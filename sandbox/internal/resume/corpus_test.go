package resume_test

import (
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/stint-run/stint/sandbox/internal/resume"
)

// TestTransformCorpusValid transforms the corpus's real programs
// (../shared/corpus): wazero accepts each result. (The sandbox's
// TestResumeRealGuests runs them, suspended and resumed.)
func TestTransformCorpusValid(t *testing.T) {
	for _, name := range []string{"lua.wasm", "sqlite3.wasm", "zstd.wasm"} {
		b, err := os.ReadFile("../../../../shared/corpus/" + name)
		if err != nil {
			t.Skipf("the corpus is absent: %v", err)
		}
		res, err := resume.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		r := wazero.NewRuntimeWithConfig(context.Background(), wazero.NewRuntimeConfigInterpreter()) // validates without compiling to machine code
		_, err = r.CompileModule(context.Background(), res.Wasm)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %d -> %d bytes", name, len(b), len(res.Wasm))
		_ = r.Close(context.Background())
	}
}
