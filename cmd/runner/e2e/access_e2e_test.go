package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeEnforcesItsOwnMountsAllow: a submitter with a wider allow-list
// than the runner's (`runner submit --mounts-allow / --mount /:/host:rw`)
// gets its task queued, but the runner that runs it refuses it with its own
// allow-list: dead at its first attempt, outcome refused, with the reason;
// the runner goes on with the next task.
func TestServeEnforcesItsOwnMountsAllow(t *testing.T) {
	t.Parallel()
	dir, allowed := dataDir(t), t.TempDir()
	p := startServe(t, dir, "--mounts-allow", allowed)

	out, stderr, code := runRunner(t, "", "submit", fixture(t, "noop"), "--mounts-allow", "/", "--mount", "/:/host:rw",
		"--wait", "--data-dir", dir)
	require.Equal(t, 4, code, out)
	require.Contains(t, stderr, "ended dead: mount / is not under this runner's mounts.allow ["+allowed+"]")
	p.waitLine(t, "task refused: its mounts are not allowed here")
	m := regexp.MustCompile(`task (\d+) ended dead`).FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	id := m[1]
	out, _, code = runRunner(t, "", "tasks", "show", id, "--data-dir", dir)
	require.Equal(t, 0, code)
	require.Contains(t, out, "refused")
	require.Equal(t, 1, strings.Count(out, "refused"), "one attempt, not retried:\n%s", out)

	// A symlink under the allowed directory that leads out is refused at
	// submission already (the submitter's own allow-list, resolved).
	require.NoError(t, os.Symlink("/", filepath.Join(allowed, "root")))
	_, stderr, code = runRunner(t, "", "submit", fixture(t, "noop"), "--mounts-allow", allowed, "--mount", allowed+"/root:/host",
		"--data-dir", dir)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "(resolves to /) is not under this runner's mounts.allow")

	out, stderr, code = runRunner(t, "hi", "submit", fixture(t, "echo"), "--input", "-", "--mounts-allow", allowed,
		"--mount", allowed+":/data", "--wait", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, "hi", out)
	p.stopCleanly(t)
}

// TestRunResolvesMounts: `runner run` mounts any directory (the operator's
// own command line) but refuses one that does not exist or a relative
// guest path.
func TestRunResolvesMounts(t *testing.T) {
	t.Parallel()
	dir, host := dataDir(t), t.TempDir()
	require.NoError(t, os.Symlink(host, filepath.Join(t.TempDir(), "link")))
	runExits(t, 2, "gone: the host directory does not exist",
		"run", "-v", fixture(t, "noop"), "--mount", host+"/gone:/data", "--data-dir", dir)
	runExits(t, 2, `the guest path "data" is not absolute`,
		"run", "-v", fixture(t, "noop"), "--mount", host+":data", "--data-dir", dir)
	_, stderr, code := runRunner(t, "", "run", "-v", fixture(t, "noop"), "--mount", host+":/data:rw", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
}

// TestDataFileModes: in a fresh data directory, `runner run`, `runner
// serve` and `runner submit` make the data directory and the compilation
// cache 0700 and every store and cache file 0600, under the usual umask and
// under umask 0. Not parallel: the umask is the process's, and the
// children inherit it.
func TestDataFileModes(t *testing.T) {
	for _, umask := range []int{0o022, 0} {
		func() {
			old := syscall.Umask(umask)
			defer syscall.Umask(old)
			root := t.TempDir()

			// runner run creates no data directory, but uses (and makes
			// private) the compilation cache of one that exists.
			runDir := filepath.Join(root, "run")
			require.NoError(t, os.Mkdir(runDir, 0o700))
			_, stderr, code := runRunner(t, "", "run", "-v", fixture(t, "noop"), "--data-dir", runDir)
			require.Equal(t, 0, code, stderr)
			require.NotContains(t, stderr, "open to other users")
			modes := treeModes(t, runDir)
			require.Equal(t, fs.FileMode(0o700), modes["."])
			require.Equal(t, fs.FileMode(0o700), modes["cache"])
			requirePrivate(t, modes, umask)

			serveDir := filepath.Join(root, "serve")
			p := startServe(t, serveDir)
			out, stderr, code := runRunner(t, "hi", "submit", fixture(t, "echo"), "--input", "-", "--wait", "--data-dir", serveDir)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, "hi", out)
			modes = treeModes(t, serveDir) // while serve runs: -wal and -shm exist
			for _, f := range []string{"stint.db", "stint.db-wal", "stint.db-shm", "stint.db.lock"} {
				require.Equal(t, fs.FileMode(0o600), modes[f], "%s under umask %#o: %v", f, umask, modes)
			}
			require.Equal(t, fs.FileMode(0o700), modes["."])
			requirePrivate(t, modes, umask)
			p.stopCleanly(t)
			require.NotContains(t, p.stderr(), "open to other users")
			require.NotContains(t, p.stderr(), "readable by other users")
		}()
	}
}

// treeModes maps every file and directory under dir (relative path, "."
// for dir) to its permission bits.
func treeModes(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	modes := map[string]fs.FileMode{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		modes[rel] = fi.Mode().Perm()
		return nil
	}))
	return modes
}

// requirePrivate checks that nothing in modes is open to other users.
func requirePrivate(t *testing.T, modes map[string]fs.FileMode, umask int) {
	t.Helper()
	for f, m := range modes {
		require.Zero(t, m&0o077, "%s is %#o under umask %#o", f, m, umask)
	}
}

// TestWarnsOnAWideDataDir: a data directory other users may enter is used,
// with a warning that says how to fix it.
func TestWarnsOnAWideDataDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o755))
	stderr := runExits(t, 0, "the data directory is open to other users",
		"run", "-v", fixture(t, "noop"), "--data-dir", dir)
	require.Contains(t, stderr, "fix: chmod 700 "+dir)
	require.Contains(t, stderr, dir+" (0755)")

	// The store's files: the same.
	_, stderr, code := runRunner(t, "", "submit", fixture(t, "noop"), "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "store files are readable by other users")
	require.NoError(t, os.Chmod(dir, 0o700))
	require.NoError(t, os.Chmod(filepath.Join(dir, "stint.db"), 0o644))
	_, stderr, code = runRunner(t, "", "tasks", "list", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.NotContains(t, stderr, "the data directory is open to other users")
	require.Contains(t, stderr, "store files are readable by other users")
	require.Contains(t, stderr, "fix: chmod 600 "+filepath.Join(dir, "stint.db"))
}
