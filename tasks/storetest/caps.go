package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
)

// CapCase is a spec right at one of Spec.Validate's caps and one just
// over it, with the limit the refusal names.
type CapCase struct {
	Limit    string
	At, Over tasks.Spec
}

// CapCases returns one CapCase for each cap of tasks.MaxCaps and each
// fixed cap (tasks.MaxEnvName, tasks.MaxMountPath): each spec is one of
// base with the one field set. The mounts right at limits.max_mounts are
// of host path mountAt. The stores' suite submits them (Run), and
// package tasks's tests check them against Spec.Validate and CheckSpec.
func CapCases(base func() tasks.Spec, mountAt string) []CapCase {
	m := tasks.MaxCaps
	s := func(f func(*tasks.Spec)) tasks.Spec {
		spec := base()
		f(&spec)
		return spec
	}
	args := func(n, size int) []string {
		a := make([]string, n)
		for i := range a {
			a[i] = strings.Repeat("a", size)
		}
		return a
	}
	env := func(n, size int) map[string]string { // size counts NAME=value
		v := make(map[string]string, n)
		for i := range n {
			v[fmt.Sprintf("V%07d", i)] = strings.Repeat("v", size-9)
		}
		return v
	}
	mounts := func(n int, path string) []tasks.Mount {
		ms := make([]tasks.Mount, n)
		for i := range ms {
			ms[i] = tasks.Mount{HostPath: path, GuestPath: fmt.Sprintf("/m%d", i)}
		}
		return ms
	}
	long := "/" + strings.Repeat("d", tasks.MaxMountPath-1)
	rep := func(c string, n int64) string { return strings.Repeat(c, int(n)) }
	return []CapCase{
		{"limits.max_args", s(func(x *tasks.Spec) { x.Args = args(int(m.Args), 1) }),
			s(func(x *tasks.Spec) { x.Args = args(int(m.Args)+1, 1) })},
		{"limits.max_args_bytes", s(func(x *tasks.Spec) { x.Args = args(4, int(m.ArgsBytes)/4) }),
			s(func(x *tasks.Spec) { x.Args = append(args(4, int(m.ArgsBytes)/4), "x") })},
		{"limits.max_env", s(func(x *tasks.Spec) { x.Env = env(int(m.Env), 10) }),
			s(func(x *tasks.Spec) { x.Env = env(int(m.Env)+1, 10) })},
		{"limits.max_env_bytes", s(func(x *tasks.Spec) { x.Env = env(4, int(m.EnvBytes)/4) }),
			s(func(x *tasks.Spec) { x.Env = env(4, int(m.EnvBytes)/4); x.Env["A"] = "" })},
		{"tasks.MaxEnvName", s(func(x *tasks.Spec) { x.Env = map[string]string{rep("N", tasks.MaxEnvName): "v"} }),
			s(func(x *tasks.Spec) { x.Env = map[string]string{rep("N", tasks.MaxEnvName+1): "v"} })},
		{"limits.max_queue", s(func(x *tasks.Spec) { x.Queue = rep("q", m.Queue) }),
			s(func(x *tasks.Spec) { x.Queue = rep("q", m.Queue+1) })},
		{"limits.max_idempotency_key", s(func(x *tasks.Spec) { x.IdempotencyKey = rep("k", m.IdempotencyKey) }),
			s(func(x *tasks.Spec) { x.IdempotencyKey = rep("k", m.IdempotencyKey+1) })},
		{"limits.max_mounts", s(func(x *tasks.Spec) { x.Mounts = mounts(int(m.Mounts), mountAt) }),
			s(func(x *tasks.Spec) { x.Mounts = mounts(int(m.Mounts)+1, "/data") })},
		{"tasks.MaxMountPath", s(func(x *tasks.Spec) { x.Mounts = mounts(1, long) }),
			s(func(x *tasks.Spec) { x.Mounts = mounts(1, long+"d") })},
	}
}

// testSubmitCaps: every store takes a spec with each field right at its
// cap (tasks.MaxCaps, tasks.MaxEnvName, tasks.MaxMountPath; a queue name
// and an idempotency key at theirs are indexed by some backend) and
// returns it whole, and refuses each one over it, by Submit and by
// SubmitMany, the same way: a *tasks.LimitError wrapping
// tasks.ErrInvalidSpec and naming the limit, nothing stored.
func testSubmitCaps(t *testing.T, e *env) {
	cases := CapCases(e.spec, "/data")
	for _, c := range cases {
		_, _, err := e.s.Submit(e.ctx, c.Over)
		requireLimit(t, err, c.Limit)
		_, err = e.s.SubmitMany(e.ctx, []tasks.Spec{e.spec(), c.Over})
		requireLimit(t, err, c.Limit)
		require.ErrorContains(t, err, "spec 1", c.Limit)
	}
	require.Empty(t, e.all(tasks.ListFilter{}), "nothing over a cap is stored")

	var want []tasks.Spec
	for _, c := range cases {
		task := e.submit(c.At)
		got := e.get(task.ID)
		require.Equal(t, len(c.At.Args), len(got.Args), c.Limit)
		require.Equal(t, c.At.Args, got.Args, c.Limit)
		require.Equal(t, c.At.Env, got.Env, c.Limit)
		require.Equal(t, c.At.Mounts, got.Mounts, c.Limit)
		require.Equal(t, c.At.WithDefaults().Queue, got.Queue, c.Limit)
		require.Equal(t, c.At.IdempotencyKey, got.IdempotencyKey, c.Limit)
		want = append(want, c.At)
	}
	// The same through SubmitMany, under other keys (the first ones are
	// taken), and the key at its cap finds its task again.
	for i := range want {
		if want[i].IdempotencyKey != "" {
			want[i].IdempotencyKey = "K" + want[i].IdempotencyKey[1:]
		}
	}
	res, err := e.s.SubmitMany(e.ctx, want)
	require.NoError(t, err)
	require.Len(t, res, len(want))
	for _, r := range res {
		require.False(t, r.Existing)
	}
	again, err := e.s.SubmitMany(e.ctx, want)
	require.NoError(t, err)
	for i, r := range again {
		if want[i].IdempotencyKey != "" {
			require.True(t, r.Existing)
			require.Equal(t, res[i].Task.ID, r.Task.ID)
		}
	}
	// A queue name at its cap is claimed by name.
	cl, err := e.s.Claim(e.ctx, tasks.ClaimRequest{Owner: "p", Max: 10, Lease: lease,
		Queues: map[string]int{strings.Repeat("q", int(tasks.MaxCaps.Queue)): 10}})
	require.NoError(t, err)
	require.Len(t, cl, 3, "one by Submit, two by SubmitMany (no key)")
}

// requireLimit: err is a *tasks.LimitError naming limit, wrapping
// tasks.ErrInvalidSpec.
func requireLimit(t *testing.T, err error, limit string) {
	t.Helper()
	require.ErrorIs(t, err, tasks.ErrInvalidSpec, limit)
	var le *tasks.LimitError
	require.ErrorAs(t, err, &le, limit)
	require.Equal(t, limit, le.Limit)
	require.ErrorContains(t, err, limit)
}
