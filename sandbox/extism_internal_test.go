package sandbox

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox/internal/extismkernel"
)

// TestExtismKernelNames: the kernel's errors name the module plugins
// import, and its var cap is the one documented.
func TestExtismKernelNames(t *testing.T) {
	t.Parallel()
	require.Equal(t, ExtismModule, extismkernel.Module)
	require.Equal(t, ExtismModule+".alloc: x", (&extismkernel.Error{Func: "alloc", Msg: "x"}).Error())
	require.Equal(t, 1<<20, MaxExtismVarBytes)
}
