package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// moduleStats are the largest values a module reaches, per limit.
type moduleStats struct {
	size, bodies, maxBody, maxLocals, maxDepth, maxBrTable, maxBranches, loops int
}

func statsOf(t *testing.T, wasm []byte) moduleStats {
	t.Helper()
	lim := ModuleLimits{}.WithDefaults()
	info, err := validateModule(wasm, &lim)
	require.NoError(t, err)
	st := moduleStats{size: len(wasm)}
	s := info.secs[info.codeSec]
	r := wreader{b: wasm[s.start:s.end]}
	n, _ := r.u32()
	for i := uint32(0); i < n; i++ {
		size, _ := r.u32()
		body, _ := r.bytes(uint64(size))
		scan, err := scanBody(body, bodyEnv{lim: &lim, numTypes: info.numTypes, globals: info.globals, fn: i}, nil)
		require.NoError(t, err)
		st.bodies++
		st.maxBody = max(st.maxBody, int(size))
		st.maxLocals = max(st.maxLocals, int(scan.locals))
		st.maxDepth = max(st.maxDepth, int(scan.maxDepth))
		st.maxBrTable = max(st.maxBrTable, int(scan.maxBrTable))
		st.maxBranches = max(st.maxBranches, int(scan.maxBranches))
		st.loops += len(scan.loops)
	}
	return st
}

func TestStatsOfBuiltGuests(t *testing.T) {
	files, _ := filepath.Glob("../wasm-examples/build/*.wasm")
	if len(files) == 0 {
		t.Skip("make wasm first")
	}
	for _, f := range files {
		wasm, err := os.ReadFile(f)
		require.NoError(t, err)
		lim := ModuleLimits{}.WithDefaults()
		info, err := validateModule(wasm, &lim)
		require.NoError(t, err)
		t.Logf("%s: %+v types=%d funcs=%d globals=%d tables=%+v exports=%d", filepath.Base(f), statsOf(t, wasm), info.numTypes, info.importedFuncs+info.definedFuncs, info.globals, info.tables, len(info.exports))
	}
}
