package main

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/sandbox"
)

// TestServerSandboxStats: every counter the server exports is copied from
// the runtime's field of the same name.
func TestServerSandboxStats(t *testing.T) {
	t.Parallel()
	var st sandbox.Stats
	v := reflect.ValueOf(&st).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.CanInt() {
			f.SetInt(int64(i + 1))
		}
	}
	got := reflect.ValueOf(serverSandboxStats(st))
	for i := range got.NumField() {
		name := got.Type().Field(i).Name
		want := v.FieldByName(name)
		require.True(t, want.IsValid(), "sandbox.Stats has no %s", name)
		require.Equal(t, want.Int(), got.Field(i).Int(), name)
	}
}
