package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/stint-run/stint/sandbox/internal/extismkernel"
)

// ExtismModule is the import module of Extism's plugin ABI: a module that
// imports it is an Extism plugin (docs/plugins.md, "Extism plugins").
const ExtismModule = "extism:host/env"

// MaxExtismVarBytes caps an Extism plugin's vars, per instance.
const MaxExtismVarBytes = extismkernel.MaxVarBytes

// ExtismLogLevel is get_log_level's answer: info (docs/plugins.md).
const ExtismLogLevel = 2

// extismLogLevels are the levels of the log functions (the PDKs' numbers).
var extismLogLevels = map[string]int32{"log_trace": 0, "log_debug": 1, "log_info": 2, "log_warn": 3, "log_error": 4}

// extismFunc is one function of ExtismModule: its signature and its Go
// implementation, which gets the instance's kernel.
type extismFunc struct {
	params, results []ValueType
	fn              func(c extismCall, stack []uint64)
}

// extismCall is what an ExtismModule function works with.
type extismCall struct {
	k   *extismkernel.Kernel
	st  *runState
	mod api.Module
	fn  string
}

// linear is the guest's linear memory size, for the memory limit.
func (c extismCall) linear() uint64 { return uint64(memSize(c.mod)) }

var (
	extI64      = []ValueType{I64}
	extI64I64   = []ValueType{I64, I64}
	extI32      = []ValueType{I32}
	extI64I32   = []ValueType{I64, I32}
	extFuncsMap = map[string]extismFunc{
		"alloc": {extI64, extI64, func(c extismCall, s []uint64) { s[0] = c.k.Alloc(s[0], c.linear()) }},
		"free":  {extI64, nil, func(c extismCall, s []uint64) { c.k.Free(s[0]) }},
		"length": {extI64, extI64, func(c extismCall, s []uint64) {
			s[0] = c.k.Length(s[0])
		}},
		"length_unsafe": {extI64, extI64, func(c extismCall, s []uint64) { s[0] = c.k.Length(s[0]) }},
		"load_u8":       {extI64, extI32, func(c extismCall, s []uint64) { s[0] = uint64(c.k.LoadU8(s[0])) }},
		"load_u64":      {extI64, extI64, func(c extismCall, s []uint64) { s[0] = c.k.LoadU64(s[0]) }},
		"store_u8":      {extI64I32, nil, func(c extismCall, s []uint64) { c.k.StoreU8(s[0], uint8(s[1])) }},
		"store_u64":     {extI64I64, nil, func(c extismCall, s []uint64) { c.k.StoreU64(s[0], s[1]) }},
		"input_set":     {extI64I64, nil, func(c extismCall, s []uint64) { c.k.InputSet(s[0], s[1]) }},
		"input_length":  {nil, extI64, func(c extismCall, s []uint64) { s[0] = c.k.InputLength() }},
		"input_offset":  {nil, extI64, func(c extismCall, s []uint64) { s[0] = c.k.InputOffset() }},
		"input_load_u8": {extI64, extI32, func(c extismCall, s []uint64) {
			s[0] = uint64(c.k.InputSpan("input_load_u8", s[0], 1)[0])
		}},
		"input_load_u64": {extI64, extI64, func(c extismCall, s []uint64) {
			s[0] = leUint64(c.k.InputSpan("input_load_u64", s[0], 8))
		}},
		"output_set":       {extI64I64, nil, extismOutputSet},
		"output_length":    {nil, extI64, func(c extismCall, s []uint64) { s[0] = c.k.OutputLength() }},
		"output_offset":    {nil, extI64, func(c extismCall, s []uint64) { s[0] = c.k.OutputOffset() }},
		"reset":            {nil, nil, func(c extismCall, _ []uint64) { c.k.Reset() }},
		"error_set":        {extI64, nil, func(c extismCall, s []uint64) { c.k.ErrorSet(s[0]) }},
		"error_get":        {nil, extI64, func(c extismCall, s []uint64) { s[0] = c.k.ErrorOffset() }},
		"memory_bytes":     {nil, extI64, func(c extismCall, s []uint64) { s[0] = c.k.MemoryBytes() }},
		"config_get":       {extI64, extI64, extismConfigGet},
		"var_get":          {extI64, extI64, extismVarGet},
		"var_set":          {extI64I64, nil, func(c extismCall, s []uint64) { c.k.VarSet(s[0], s[1]) }},
		"get_log_level":    {nil, extI32, func(_ extismCall, s []uint64) { s[0] = ExtismLogLevel }},
		"http_request":     {extI64I64, extI64, extismHTTPRequest}, // extism_http.go
		"http_status_code": {nil, extI32, func(c extismCall, s []uint64) { s[0] = uint64(uint32(c.st.http.status)) }},
		"http_headers":     {nil, extI64, extismHTTPHeaders},
	}
)

func init() {
	for name := range extismLogLevels {
		extFuncsMap[name] = extismFunc{extI64, nil, extismLog}
	}
}

// extismOutputSet is output_set: over the call's output limit
// (Kernel.MaxOutput), the call ends as output_limit.
func extismOutputSet(c extismCall, s []uint64) {
	if !c.k.OutputSet(s[0], s[1]) {
		panic(&callError{kind: KindOutputLimit, msg: fmt.Sprintf("output of %d bytes is over its limit of %d bytes", s[1], c.k.MaxOutput)})
	}
}

func leUint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// extismConfigGet is config_get(key) -> value: a new block with the
// manifest's value for the key in the block at key (then freed); 0 if the
// manifest grants no such key.
func extismConfigGet(c extismCall, s []uint64) {
	key := c.k.Block("config_get", s[0])
	var v string
	var ok bool
	if c.st.ident != nil {
		v, ok = c.st.ident.config[string(key)]
	}
	if !ok {
		s[0] = 0
		return
	}
	s[0] = c.k.WriteBlock([]byte(v), c.linear())
}

// extismVarGet is var_get(name) -> value: a new block with the instance's
// var, 0 if it has none.
func extismVarGet(c extismCall, s []uint64) {
	v, ok := c.k.VarGet(s[0])
	if !ok {
		s[0] = 0
		return
	}
	s[0] = c.k.WriteBlock(v, c.linear())
}

// extismLog writes the message in the block at s[0] to the call's stderr
// (capped like any stderr: past its cap the call ends as output_limit),
// as "[level] message\n", if its level is at least ExtismLogLevel; the
// block is freed.
func extismLog(c extismCall, s []uint64) {
	level := extismLogLevels[c.fn]
	msg := c.k.Block(c.fn, s[0])
	if level >= ExtismLogLevel {
		prefix := "[" + strings.TrimPrefix(c.fn, "log_") + "] "
		line := make([]byte, 0, len(prefix)+len(msg)+1)
		line = append(append(append(line, prefix...), msg...), '\n')
		_, _ = c.st.stderr.Write(line) // over its cap it ends the call (output_limit)
	}
	c.k.Free(s[0])
}

// instantiateExtismModule registers ExtismModule's functions in r.
func instantiateExtismModule(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder(ExtismModule)
	names := make([]string, 0, len(extFuncsMap))
	for n := range extFuncsMap {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		f := extFuncsMap[name]
		b.NewFunctionBuilder().WithGoModuleFunction(extismGoFunc(name, f.fn), f.params, f.results).Export(name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// extismGoFunc adapts an ExtismModule function for wazero: it finds the
// call's kernel (a module that is not running as an Extism plugin call
// traps).
func extismGoFunc(name string, fn func(extismCall, []uint64)) api.GoModuleFunc {
	return func(ctx context.Context, m api.Module, stack []uint64) {
		st := stateOf(ctx)
		if st == nil || st.ext == nil {
			panic(&extismkernel.Error{Func: name, Msg: "called outside an Extism plugin call (load the module with LoadPlugin)"})
		}
		fn(extismCall{k: st.ext, st: st, mod: m, fn: name}, stack)
	}
}

// checkExtismImport refuses an import of ExtismModule that it does not
// provide, or with another signature.
func checkExtismImport(name string, params, results []ValueType) error {
	f, ok := extFuncsMap[name]
	if !ok {
		return &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf("module imports %s.%s, which Stint's Extism host does not provide (docs/plugins.md)", ExtismModule, name)}
	}
	if !sameTypes(params, f.params) || !sameTypes(results, f.results) {
		return &ModuleError{Kind: KindBadImport, Message: fmt.Sprintf("module imports %s.%s as %s, but it is %s",
			ExtismModule, name, signature(params, results), signature(f.params, f.results))}
	}
	return nil
}

// importsExtism reports whether a compiled module imports ExtismModule.
func importsExtism(cm wazero.CompiledModule) bool {
	for _, f := range cm.ImportedFunctions() {
		if mod, _, _ := f.Import(); mod == ExtismModule {
			return true
		}
	}
	return false
}

// extismShape reports whether def is an export of Extism's convention:
// FUNC() -> i32 (0: success) or FUNC() -> ().
func extismShape(def api.FunctionDefinition) (exportShape, bool) {
	if len(def.ParamTypes()) != 0 {
		return exportShape{}, false
	}
	switch rs := def.ResultTypes(); {
	case len(rs) == 0:
		return exportShape{extism: true}, true
	case sameTypes(rs, []ValueType{I32}):
		return exportShape{extism: true, output: true}, true
	}
	return exportShape{}, false
}

// kernelFailure classifies a run ended by a misuse of the Extism kernel:
// a trap whose message names the function. It reports whether err was one.
func kernelFailure(err error, out *Outcome) bool {
	var ke *extismkernel.Error
	if !errors.As(err, &ke) {
		return false
	}
	out.Kind = KindTrapped
	_, out.Stack = splitTrap(err)
	out.Message = ke.Error()
	return true
}
