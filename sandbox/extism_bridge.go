package sandbox

import (
	"github.com/stint-run/stint/sandbox/internal/extismbridge"
	"github.com/stint-run/stint/sandbox/internal/extismkernel"
)

// extismUserModule is where Extism plugins import their host app's own
// functions (package sandbox/extism makes them; extism.UserModule).
const extismUserModule = "extism:host/user"

// Package sandbox/extism reaches a call's kernel memory through
// extismbridge, so that sandbox's API does not show it.
func init() {
	extismbridge.Kernel = func(call any) *extismkernel.Kernel {
		c, ok := call.(Call)
		if !ok || c.st == nil {
			return nil
		}
		return c.st.ext
	}
}
