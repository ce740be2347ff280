package tasks_test

import (
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
	allow := []string{"/srv/data"}
	policy := tasks.Policy{MountsAllow: allow, Max: max, MaxInput: 4}
	ok := []tasks.Spec{
		{},
		{Limits: max},
		{Input: []byte("four")},
		{Mounts: []tasks.Mount{{HostPath: "/srv/data", GuestPath: "/data"}, {HostPath: "/srv/data/x", GuestPath: "/x"}}},
	}
	for _, s := range ok {
		require.NoError(t, tasks.CheckSpec(s, policy), "%+v", s)
	}
	bad := map[string]tasks.Spec{
		"memory 67108865 bytes is over":  {Limits: tasks.Limits{MemoryBytes: max.MemoryBytes + 1}},
		"timeout 1m0.001s is over":       {Limits: tasks.Limits{Timeout: time.Minute + time.Millisecond}},
		"stdout 1048577 bytes is over":   {Limits: tasks.Limits{Stdout: max.Stdout + 1}},
		"stderr 1025 bytes is over":      {Limits: tasks.Limits{Stderr: max.Stderr + 1}},
		"checkpoint 1048577 bytes":       {Limits: tasks.Limits{Checkpoint: max.Checkpoint + 1}},
		"mount /srv/database is not":     {Mounts: []tasks.Mount{{HostPath: "/srv/database", GuestPath: "/d"}}},
		"mount /srv/data/../etc is not":  {Mounts: []tasks.Mount{{HostPath: "/srv/data/../etc", GuestPath: "/d"}}},
		"mount /tmp is not under any al": {Mounts: []tasks.Mount{{HostPath: "/tmp", GuestPath: "/d"}}},
		"input 5 bytes is over the runn": {Input: []byte("five!")},
	}
	for msg, s := range bad {
		err := tasks.CheckSpec(s, policy)
		require.ErrorIs(t, err, tasks.ErrInvalidSpec, msg)
		require.ErrorContains(t, err, msg)
	}
	require.Error(t, tasks.CheckSpec(tasks.Spec{Mounts: []tasks.Mount{{HostPath: "/srv/data", GuestPath: "/d"}}}, tasks.Policy{Max: max}),
		"no allow-list: no mounts")
	require.NoError(t, tasks.CheckSpec(tasks.Spec{Limits: tasks.Limits{Stdout: 1 << 40}, Input: make([]byte, 1<<20)}, tasks.Policy{}),
		"a zero maximum is no cap")
}
