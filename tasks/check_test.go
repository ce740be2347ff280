package tasks_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/storetest"
)

// TestCheckSpec: mounts only under the allow-list (deny by default), and no
// limit over the runner's maximum; a zero maximum is no cap.
func TestCheckSpec(t *testing.T) {
	t.Parallel()
	max := tasks.Limits{MemoryBytes: 64 << 20, Timeout: time.Minute, Stdout: 1 << 20, Stderr: 1 << 10, Checkpoint: 1 << 20}
	root := t.TempDir()
	data := filepath.Join(root, "data")
	require.NoError(t, os.MkdirAll(filepath.Join(data, "x"), 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(root, "database"), 0o700))
	allow := []string{data}
	policy := tasks.Policy{MountsAllow: allow, Max: max, MaxInput: 4}
	ok := []tasks.Spec{
		{},
		{Limits: max},
		{Input: []byte("four")},
		{Mounts: []tasks.Mount{{HostPath: data, GuestPath: "/data"}, {HostPath: data + "/x", GuestPath: "/x"}}},
	}
	for _, s := range ok {
		require.NoError(t, tasks.CheckSpec(s, policy), "%+v", s)
	}
	bad := map[string]tasks.Spec{
		"memory 67108865 bytes is over":                                   {Limits: tasks.Limits{MemoryBytes: max.MemoryBytes + 1}},
		"timeout 1m0.001s is over":                                        {Limits: tasks.Limits{Timeout: time.Minute + time.Millisecond}},
		"stdout 1048577 bytes is over":                                    {Limits: tasks.Limits{Stdout: max.Stdout + 1}},
		"stderr 1025 bytes is over":                                       {Limits: tasks.Limits{Stderr: max.Stderr + 1}},
		"checkpoint 1048577 bytes":                                        {Limits: tasks.Limits{Checkpoint: max.Checkpoint + 1}},
		"database is not under this runner's mounts.allow [" + data + "]": {Mounts: []tasks.Mount{{HostPath: root + "/database", GuestPath: "/d"}}},
		"data/../database is not under":                                   {Mounts: []tasks.Mount{{HostPath: data + "/../database", GuestPath: "/d"}}},
		"mount /tmp is not under":                                         {Mounts: []tasks.Mount{{HostPath: "/tmp", GuestPath: "/d"}}},
		"data/nope: the host directory does not":                          {Mounts: []tasks.Mount{{HostPath: data + "/nope", GuestPath: "/d"}}},
		"input 5 bytes is over the runn":                                  {Input: []byte("five!")},
	}
	for msg, s := range bad {
		err := tasks.CheckSpec(s, policy)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, msg)
		require.ErrorContains(t, err, msg)
	}
	require.ErrorContains(t, tasks.CheckSpec(tasks.Spec{Mounts: []tasks.Mount{{HostPath: data, GuestPath: "/d"}}}, tasks.Policy{Max: max}),
		"mounts.allow (empty: no mounts allowed)", "no allow-list: no mounts")
	require.NoError(t, tasks.CheckSpec(tasks.Spec{Limits: tasks.Limits{Stdout: 1 << 40}, Input: make([]byte, 1<<20)}, tasks.Policy{}),
		"a zero maximum is no cap")
}

// TestCheckSpecSymlinks: the allow-list is checked on real paths, symlinks
// resolved on both sides: a symlink under an allowed directory that leads
// out (to /, or to a sibling by a relative target) is refused; one that
// stays inside is allowed; an allow-list entry that is itself a symlink
// allows what it points to.
func TestCheckSpecSymlinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	data := filepath.Join(root, "data")
	require.NoError(t, os.MkdirAll(filepath.Join(data, "in"), 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(root, "secret"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(data, "file"), nil, 0o600))
	require.NoError(t, os.Symlink("/", filepath.Join(data, "root")))
	require.NoError(t, os.Symlink("../secret", filepath.Join(data, "up")))
	require.NoError(t, os.Symlink("in", filepath.Join(data, "inside")))
	require.NoError(t, os.Symlink(data, filepath.Join(root, "alias")))
	policy := tasks.Policy{MountsAllow: []string{data}}
	mount := func(host string) tasks.Spec {
		return tasks.Spec{Mounts: []tasks.Mount{{HostPath: host, GuestPath: "/m"}}}
	}

	for host, msg := range map[string]string{
		data + "/root":         "data/root (resolves to /) is not under this runner's mounts.allow",
		data + "/root/etc":     "(resolves to /etc) is not under",
		data + "/up":           "data/up (resolves to " + root + "/secret) is not under",
		data + "/file":         "data/file: not a directory",
		data + "/root/nowhere": "the host directory does not exist",
	} {
		err := tasks.CheckSpec(mount(host), policy)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, host)
		require.ErrorContains(t, err, msg, host)
	}
	require.NoError(t, tasks.CheckSpec(mount(data+"/inside"), policy), "a symlink that stays inside")
	require.NoError(t, tasks.CheckSpec(mount(data+"/in"), tasks.Policy{MountsAllow: []string{root + "/alias"}}),
		"an allow-list entry that is a symlink allows where it points")
	require.Error(t, tasks.CheckSpec(mount(root+"/secret"), tasks.Policy{MountsAllow: []string{root + "/alias"}}))
	require.Error(t, tasks.CheckSpec(mount(data), tasks.Policy{MountsAllow: []string{root + "/missing"}}),
		"an allow-list entry that does not exist allows nothing")
}

// TestSpecValidateMountPaths: both paths of a mount must be absolute, and
// only a writable mount may accept snapshots.
func TestSpecValidateMountPaths(t *testing.T) {
	t.Parallel()
	spec := func(host, guest string) tasks.Spec {
		return tasks.Spec{Module: strings.Repeat("a", 64), Mounts: []tasks.Mount{{HostPath: host, GuestPath: guest}}}
	}
	require.NoError(t, spec("/srv/in", "/in").Validate())
	err := spec("/srv/in", "in").Validate()
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.ErrorContains(t, err, `mount 0: guest_path "in" is not absolute`)
	err = spec("srv/in", "/in").Validate()
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.ErrorContains(t, err, `mount 0: host_path "srv/in" is not absolute`)
	snap := spec("/srv/in", "/in")
	snap.Mounts[0].Snapshots = true
	err = snap.Validate()
	require.ErrorIs(t, err, tasks.ErrInvalidSpec)
	require.ErrorContains(t, err, "mount 0: snapshots is for a writable mount")
	snap.Mounts[0].Writable = true
	require.NoError(t, snap.Validate())
}

// TestLimitsJSON: a timeout is read as nanoseconds or as Go syntax, the
// encoding round-trips, and an unknown key (a misspelt limit) is an error.
func TestLimitsJSON(t *testing.T) {
	t.Parallel()
	var s tasks.Spec
	require.NoError(t, json.Unmarshal([]byte(`{"limits":{"timeout":"1m30s","memory_bytes":1048576,"stdout":5}}`), &s))
	require.Equal(t, tasks.Limits{Timeout: 90 * time.Second, MemoryBytes: 1 << 20, Stdout: 5}, s.Limits)
	b, err := json.Marshal(s.Limits)
	require.NoError(t, err)
	var back tasks.Limits
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, s.Limits, back)
	require.NoError(t, json.Unmarshal([]byte(`{"timeout":30000000000}`), &back))
	require.Equal(t, tasks.Limits{Timeout: 30 * time.Second}, back)
	require.NoError(t, json.Unmarshal([]byte(`{"limits":null}`), &s))
	require.ErrorContains(t, json.Unmarshal([]byte(`{"memory_pages":2}`), &back), `unknown field "memory_pages"`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"timeout":"soon"}`), &back), `duration "soon"`)
	require.ErrorContains(t, json.Unmarshal([]byte(`{"timeout":1.5}`), &back), "integer number of nanoseconds")
}

// TestSpecValidateCaps: Spec.Validate takes every field right at its cap
// (tasks.MaxCaps, MaxEnvName, MaxMountPath) and refuses it one over, with
// a *tasks.LimitError that wraps ErrInvalidSpec and names the limit.
func TestSpecValidateCaps(t *testing.T) {
	t.Parallel()
	for _, c := range storetest.CapCases(func() tasks.Spec { return tasks.Spec{Module: strings.Repeat("a", 64)} }, "/") {
		require.NoError(t, c.At.Validate(), c.Limit)
		err := c.Over.Validate()
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, c.Limit)
		var le *tasks.LimitError
		require.ErrorAs(t, err, &le, c.Limit)
		require.Equal(t, c.Limit, le.Limit)
		require.True(t, le.Ceiling, c.Limit)
		require.Greater(t, le.Got, le.Max, c.Limit)
		require.ErrorContains(t, err, "the most any runner takes ("+c.Limit+")")
	}
}

// TestCheckSpecCaps: a policy's caps are lower than MaxCaps and named by
// their configuration key; a zero policy is MaxCaps; a policy over
// MaxCaps takes no more than MaxCaps; a spec over a cap is refused before
// its mounts are resolved.
func TestCheckSpecCaps(t *testing.T) {
	t.Parallel()
	p := tasks.Policy{Caps: tasks.Caps{Args: 2, ArgsBytes: 8, Env: 1, EnvBytes: 6, Queue: 3, IdempotencyKey: 4, Mounts: 1}}
	require.NoError(t, tasks.CheckSpec(tasks.Spec{Args: []string{"abcd", "efgh"}, Env: map[string]string{"AB": "cde"},
		Queue: "abc", IdempotencyKey: "abcd"}, p))
	for msg, s := range map[string]tasks.Spec{
		"args: 3 entries, over this runner's limits.max_args of 2 entries":     {Args: []string{"a", "b", "c"}},
		"args: 9 bytes, over this runner's limits.max_args_bytes of 8 bytes":   {Args: []string{"abcd", "efghi"}},
		"env: 2 entries, over this runner's limits.max_env of 1 entries":       {Env: map[string]string{"A": "", "B": ""}},
		"env: 7 bytes, over this runner's limits.max_env_bytes of 6 bytes":     {Env: map[string]string{"AB": "cdef"}},
		"queue: 4 bytes, over this runner's limits.max_queue of 3 bytes":       {Queue: "abcd"},
		"idempotency_key: 5 bytes, over this runner's limits.max_idempotency_": {IdempotencyKey: "abcde"},
		// Not resolved: the mounts do not exist and no allow-list is set.
		"mounts: 2 entries, over this runner's limits.max_mounts of 1 entries": {Mounts: []tasks.Mount{{HostPath: "/nope", GuestPath: "/a"}, {HostPath: "/nope", GuestPath: "/b"}}},
	} {
		err := tasks.CheckSpec(s, p)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, msg)
		var le *tasks.LimitError
		require.ErrorAs(t, err, &le, msg)
		require.False(t, le.Ceiling)
		require.ErrorContains(t, err, msg)
	}
	huge := tasks.Policy{Caps: tasks.Caps{Args: 1 << 40, ArgsBytes: 1 << 40, Env: 1 << 40, EnvBytes: 1 << 40, Queue: 1 << 40, IdempotencyKey: 1 << 40, Mounts: 1 << 40}}
	for _, c := range storetest.CapCases(func() tasks.Spec { return tasks.Spec{} }, "/") {
		if c.Limit != "tasks.MaxMountPath" { // a path that long does not exist
			require.NoError(t, tasks.CheckSpec(c.At, tasks.Policy{MountsAllow: []string{"/"}}), c.Limit)
		}
		for _, p := range []tasks.Policy{{}, huge} {
			err := tasks.CheckSpec(c.Over, p)
			var le *tasks.LimitError
			require.ErrorAs(t, err, &le, c.Limit)
			require.Equal(t, c.Limit, le.Limit)
		}
	}
}
