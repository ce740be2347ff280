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

// TestSpecValidateMountPaths: both paths of a mount must be absolute.
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
