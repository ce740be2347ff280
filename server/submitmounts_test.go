//go:build unix

package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/server"
	"github.com/stint-run/stint/tasks"
)

// TestSubmitChecksMountsOnTheHost: the API's submit (the runner's: a real
// pool's Submit) checks a mount against mounts.allow on the host, as the
// runner that runs it will: a symlink under the allow-list that leads out
// of it is refused (422), naming where it leads, and so is a directory
// that does not exist; a symlink outside the allow-list that leads into it
// is queued. No check on the path's text gives these answers
// (docs/configuration.md, Mounts).
func TestSubmitChecksMountsOnTheHost(t *testing.T) {
	t.Parallel()
	base := mountTree(t)
	allowed, outside := filepath.Join(base, "allowed"), filepath.Join(base, "outside")

	store := openStore(t)
	p, err := pool.New(store, newRuntime(t), pool.Config{Workers: 1, Policy: tasks.Policy{MountsAllow: []string{allowed}}})
	require.NoError(t, err)
	_, r := startServer(t, server.Config{}, server.Deps{Store: store, Submit: p.Submit})
	var m moduleBody
	r.expect(r.do("POST", "/v1/modules", noop), http.StatusCreated, &m)
	submit := func(hostPath string) reply {
		mounts, err := json.Marshal([]tasks.Mount{{HostPath: hostPath, GuestPath: "/data"}})
		require.NoError(t, err)
		return r.do("POST", "/v1/tasks", []byte(`{"module":"`+m.SHA256+`","mounts":`+string(mounts)+`}`))
	}

	rep := submit(filepath.Join(allowed, "out"))
	require.Equal(t, http.StatusUnprocessableEntity, rep.code, string(rep.body))
	require.Contains(t, string(rep.body), "(resolves to "+outside+") is not under this runner's mounts.allow")
	rep = submit(filepath.Join(allowed, "gone"))
	require.Equal(t, http.StatusUnprocessableEntity, rep.code, string(rep.body))
	require.Contains(t, string(rep.body), "the host directory does not exist")
	r.expect(submit(filepath.Join(base, "into")), http.StatusCreated, nil)
}

// mountTree makes, in a temporary directory it returns (its real path),
// the directories allowed/in and outside and the symlinks allowed/out (to
// outside) and into (to allowed/in).
func mountTree(t *testing.T) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, d := range []string{"allowed/in", "outside"} {
		require.NoError(t, os.MkdirAll(filepath.Join(base, d), 0o700))
	}
	for link, to := range map[string]string{"allowed/out": "../outside", "into": "allowed/in"} {
		require.NoError(t, os.Symlink(to, filepath.Join(base, link)))
	}
	return base
}
