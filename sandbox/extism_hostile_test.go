package sandbox_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// A hostile Extism plugin (plugin_extism.wat): every misuse of the kernel
// is a clear outcome, the host holds no more than the memory limit, and
// the next call gets a fresh instance.
func TestExtismHostile(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	rt := newRuntime(t, sandbox.Config{})
	p := loadPlugin(t, rt, "plugin_extism", sandbox.Manifest{Name: "hostile",
		HostModules: []string{sandbox.ExtismModule}, Limits: sandbox.PluginLimits{MemoryBytes: limit}})

	out := call(t, p, "echo", "sixteen bytes!!!", sandbox.CallOptions{})
	require.Equal(t, sandbox.KindSucceeded, out.Kind, out.String())
	require.Equal(t, "sixteen bytes!!!", string(out.Output))

	size := func(n uint64) string { return string(binary.LittleEndian.AppendUint64(nil, n)) }
	for _, c := range []struct {
		fn, input string
		kind      sandbox.Kind
		msg       string
		code      uint32
	}{
		{"load_far", "", sandbox.KindTrapped, "extism:host/env.load_u64: offset 18446744073709551608 length 8 is outside the plugin's Extism memory [8, 8)", 0},
		{"load_past", "", sandbox.KindTrapped, "extism:host/env.load_u64: offset 12 length 8 is outside the plugin's Extism memory [8, 16)", 0},
		{"store_far", "", sandbox.KindTrapped, "extism:host/env.store_u64: offset 1099511627776 length 8 is outside the plugin's Extism memory [8, 8)", 0},
		{"output_far", "", sandbox.KindTrapped, "extism:host/env.output_set: offset 18446744073709551615 length 2 is outside", 0},
		{"input_past", "12345", sandbox.KindTrapped, "extism:host/env.input_load_u64: offset 5 length 8 is outside the input (5 bytes)", 0},
		{"alloc_4g", "", sandbox.KindMemoryLimit, "extism:host/env.alloc: a block of 4294967296 bytes would take the plugin over its memory limit of 1048576 bytes", 0},
		{"error_bad", "", sandbox.KindTrapped, "extism:host/env.error_set: offset 12345 is not a live memory block", 0},
		{"var_flood", "", sandbox.KindTrapped, "extism:host/env.var_set: var", 0},
		{"freed_len", "", sandbox.KindSucceeded, "", 0},
		{"free_odd", "", sandbox.KindSucceeded, "", 0},
		// The kernel's memory and the linear memory (1 page) share the
		// limit: with a block filling what the limit leaves, the guest
		// cannot grow; with a small one it can.
		{"grow_after", size(limit - 64<<10 - 2*64 - 8), sandbox.KindFailed, "grow_after returned 7: no error message", 7},
		{"grow_after", size(8), sandbox.KindSucceeded, "", 0},
	} {
		out := call(t, p, c.fn, c.input, sandbox.CallOptions{})
		require.Equal(t, c.kind, out.Kind, "%s: %s", c.fn, out)
		require.Contains(t, out.Message, c.msg, c.fn)
		require.Equal(t, c.code, out.ExitCode, c.fn)
		if c.kind == sandbox.KindSucceeded {
			continue
		}
		out = call(t, p, "echo", "after...", sandbox.CallOptions{})
		require.Equal(t, "after...", string(out.Output), "after %s", c.fn)
	}
	require.Contains(t, call(t, p, "var_flood", "", sandbox.CallOptions{}).Message, "over their limit of 1048576")
}

// A module that imports a function Extism's ABI does not have, or with
// another signature, is refused at load, naming it.
func TestExtismBadImports(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, sandbox.Config{})
	const i32 = 0x7f
	for _, c := range []struct {
		wasm []byte
		msg  string
	}{
		{importOnly("nope", nil, nil), "module imports extism:host/env.nope, which Stint's Extism host does not provide"},
		{importOnly("alloc", []byte{i32}, []byte{i32}), "module imports extism:host/env.alloc as (i32) -> (i32), but it is (i64) -> (i64)"},
	} {
		_, err := rt.LoadPlugin(t.Context(), c.wasm, sandbox.Manifest{HostModules: []string{sandbox.ExtismModule}})
		require.ErrorIs(t, err, sandbox.ErrBadImport)
		require.Contains(t, err.Error(), c.msg)
	}
}

// importOnly is a module whose only content is one function import from
// extism:host/env with the given value types.
func importOnly(name string, params, results []byte) []byte {
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	section := func(id byte, payload []byte) []byte { return append([]byte{id, byte(len(payload))}, payload...) }
	typ := append(append(append([]byte{1, 0x60, byte(len(params))}, params...), byte(len(results))), results...)
	imp := append(append(append([]byte{1}, str("extism:host/env")...), str(name)...), 0x00, 0)
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	return append(append(wasm, section(1, typ)...), section(2, imp)...)
}
