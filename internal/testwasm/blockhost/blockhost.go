// Package blockhost is a host module for tests of what Stint does with a
// guest that no forced stop can end: stint_test.block(ptr, len i32) opens
// the host path the guest names (a named pipe) for reading and reads it
// until EOF, ignoring its context, as an embedder's host function that
// ignores the stop would. A test releases it by writing to the pipe (or
// opening and closing its write end). The stopping_block fixture calls it
// with its stdin as the path.
//
// Only tests register it: it reads any host path a guest names. The
// runner registers it only when built with the stint_testhooks tag (its
// end-to-end tests).
package blockhost

import (
	"context"
	"io"
	"os"

	"github.com/stint-run/stint/sandbox"
)

// Name is the module's import name.
const Name = "stint_test"

// Def returns the module.
func Def() sandbox.HostModuleDef {
	return sandbox.HostModuleDef{Name: Name, Funcs: []sandbox.HostFunc{{
		Name: "block", Params: []sandbox.ValueType{sandbox.I32, sandbox.I32},
		Func: func(_ context.Context, call sandbox.Call, stack []uint64) error {
			path, err := call.ReadString(uint32(stack[0]), uint32(stack[1]))
			if err != nil {
				return err
			}
			f, err := os.Open(path) // a named pipe: blocks until a writer comes
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(io.Discard, f)
			return err
		},
	}}}
}
