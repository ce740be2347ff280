package sandbox

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPluginCallStateHoldsNoStrayContext: the fields of a plugin call's
// state (pluginCall) that can hold a context, found by walking its type.
// Those of its runState are cleared at the start of every call (run:
// *st = runState{}); outside it, only the hard context is kept from one
// call to the next, and the rule in run that decides whether it may be
// (nothing asked for its Done channel, the guest ran inline, a warm
// instance, no embedder's host function, no HTTP request) covers it. A
// field added outside runState that holds a context fails here: clear it
// in run, or cover it in that rule and list it below.
func TestPluginCallStateHoldsNoStrayContext(t *testing.T) {
	ctxType := reflect.TypeFor[context.Context]()
	var found []string
	seen := map[reflect.Type]bool{}
	var walk func(ty reflect.Type, path string)
	walk = func(ty reflect.Type, path string) {
		if ty == ctxType || (ty.Kind() != reflect.Interface && ty.Implements(ctxType)) {
			found = append(found, path)
		}
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Chan:
			walk(ty.Elem(), path+"[]")
		case reflect.Map:
			walk(ty.Elem(), path+"[]")
		case reflect.Struct:
			if seen[ty] {
				return
			}
			seen[ty] = true
			for f := range ty.Fields() {
				walk(f.Type, path+"."+f.Name)
			}
		}
	}
	walk(reflect.TypeFor[pluginCall](), "pluginCall")
	var outside []string
	for _, p := range found {
		if len(p) < len("pluginCall.st.") || p[:len("pluginCall.st.")] != "pluginCall.st." {
			outside = append(outside, p)
		}
	}
	slices.Sort(outside)
	require.Equal(t, []string{"pluginCall.hard", "pluginCall.hard[].parent"}, outside,
		"a plugin call's state holds a context outside its runState: clear it in run or cover it in the reuse rule")
	require.NotEmpty(t, found, "the walk finds the runState's contexts too (hard, the readers')")
}
