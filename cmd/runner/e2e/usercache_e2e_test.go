package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
)

// TestBatchSharesRunCache: with data_dir at its default, runner run and
// runner batch keep compiled modules in one cache, the user's: a module
// runner run compiled is not compiled again by runner batch in the same
// folder (no new cache entry), and batch makes no data_dir/cache of its
// own (issue 42, item 6).
func TestBatchSharesRunCache(t *testing.T) {
	t.Parallel()
	u := newUserCacheEnv(t)
	in := filepath.Join(u.work, "in")
	require.NoError(t, os.Mkdir(in, 0o700))
	for _, n := range []string{"a.txt", "b.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(in, n), []byte("hi "+n), 0o600))
	}
	echo := fixture(t, "echo")
	u.run("run", "-v", echo, "--input", filepath.Join(in, "a.txt"))
	first := u.files()
	require.NotEmpty(t, first, "runner run compiled into the user's cache")
	u.run("batch", echo, "--in", in, "--out", filepath.Join(u.work, "out"))
	require.Equal(t, first, u.files(), "runner batch compiled the module again")
	require.DirExists(t, filepath.Join(u.work, "stint-data"), "batch's store")
	require.NoDirExists(t, filepath.Join(u.work, "stint-data", "cache"))
	got, err := os.ReadFile(filepath.Join(u.work, "out", "b.txt"))
	require.NoError(t, err)
	require.Equal(t, "hi b.txt", string(got))
}

// userCacheEnv runs the runner binary in work with the user's cache in
// xdg, as a user's shell would: no --data-dir, so its default.
type userCacheEnv struct {
	t         *testing.T
	xdg, work string
}

func newUserCacheEnv(t *testing.T) userCacheEnv {
	return userCacheEnv{t: t, xdg: t.TempDir(), work: t.TempDir()}
}

func (u userCacheEnv) env() []string {
	return append(os.Environ(), "XDG_CACHE_HOME="+u.xdg, "RUNNER_LOG_FORMAT=json")
}

// run runs the runner to its end, which must succeed, and returns stdout.
func (u userCacheEnv) run(args ...string) string {
	u.t.Helper()
	cmd := exec.Command(runnerBin, args...)
	cmd.Dir, cmd.Env = u.work, u.env()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(u.t, cmd.Run(), "runner %v: %s", args, errb.String())
	return out.String()
}

// files lists the user cache's regular files, relative to it.
func (u userCacheEnv) files() []string {
	var out []string
	dir := filepath.Join(u.xdg, "stint")
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// cacheList is runner cache list --json.
type cacheList struct {
	Dir     string `json:"dir"`
	Bytes   int64  `json:"bytes"`
	Entries []struct {
		Entry        string   `json:"entry"`
		Kind         string   `json:"kind"`
		Bytes        int64    `json:"bytes"`
		Module       string   `json:"module"`
		Names        []string `json:"names"`
		ModuleSHA256 string   `json:"module_sha256"`
	} `json:"entries"`
}

func (u userCacheEnv) list() cacheList {
	u.t.Helper()
	var l cacheList
	require.NoError(u.t, json.Unmarshal([]byte(u.run("cache", "list", "--json")), &l))
	return l
}

// TestServeSharesRunCache: runner serve without a data dir keeps compiled
// modules in the user's cache, as runner run does: a task of a module
// runner run compiled compiles nothing new, serve makes no data_dir/cache
// of its own, and the name the module was uploaded with
// (POST /v1/modules?name=) becomes its latest name in the cache (issue 42,
// item 6).
func TestServeSharesRunCache(t *testing.T) {
	t.Parallel()
	u := newUserCacheEnv(t)
	echo := fixture(t, "echo")
	u.run("run", echo)
	before := u.files()
	require.NotEmpty(t, before, "runner run compiled into the user's cache")

	cmd := exec.Command(runnerBin, "serve", "--http-addr", "127.0.0.1:0", "--workers", "1")
	cmd.Dir, cmd.Env = u.work, u.env()
	p := startCmd(t, cmd, nil)
	base := "http://" + p.apiAddr(t)
	p.waitLine(t, "runner ready")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: bound}
	post := func(path, ctype string, body []byte) []byte {
		t.Helper()
		resp, err := c.Post(base+path, ctype, bytes.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, resp.StatusCode, string(b))
		return b
	}
	var m struct{ SHA256 string }
	require.NoError(t, json.Unmarshal(post("/v1/modules?name=echo-uploaded.wasm", "application/wasm", readFile(t, echo)), &m))
	var task struct{ ID int64 }
	require.NoError(t, json.Unmarshal(post("/v1/tasks", "application/json", []byte(`{"module":"`+m.SHA256+`","input":"aGk="}`)), &task))
	testutil.WaitFor(t, "the task to succeed", func() bool {
		resp, err := c.Get(fmt.Sprintf("%s/v1/tasks/%d", base, task.ID))
		require.NoError(t, err)
		defer resp.Body.Close()
		var got struct{ State string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
		require.NotContains(t, []string{"dead", "cancelled"}, got.State)
		return got.State == "succeeded"
	})
	p.stopCleanly(t)

	require.DirExists(t, filepath.Join(u.work, "stint-data"), "serve's store")
	require.NoDirExists(t, filepath.Join(u.work, "stint-data", "cache"))
	require.Equal(t, before, u.files(), "runner serve compiled the module again, or elsewhere")
	l := u.list()
	require.Equal(t, filepath.Join(u.xdg, "stint"), l.Dir)
	require.Len(t, l.Entries, 2, "prepared and compiled")
	for _, e := range l.Entries {
		require.Equal(t, "echo-uploaded.wasm", e.Module, "%s", e.Entry)
		require.Equal(t, []string{"echo-uploaded.wasm", echo}, e.Names)
		require.Equal(t, m.SHA256, e.ModuleSHA256)
	}
}

// TestCacheListNames: runner cache list names each entry's module by the
// file runner run, call and batch compiled it from (a relative path made
// absolute), in its text and its JSON; an entry of no known module shows
// "-". runner cache prune deletes a module's record of names with its last
// entry, and keeps the record of a module whose entries are left.
func TestCacheListNames(t *testing.T) {
	t.Parallel()
	u := newUserCacheEnv(t)
	mods := filepath.Join(u.work, "mods")
	require.NoError(t, os.Mkdir(mods, 0o700))
	for _, n := range []string{"noop", "echo", "plugin_basic"} {
		require.NoError(t, os.WriteFile(filepath.Join(mods, n+".wasm"), readFile(t, fixture(t, n)), 0o600))
	}
	in := filepath.Join(u.work, "in")
	require.NoError(t, os.Mkdir(in, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(in, "a.txt"), []byte("a"), 0o600))
	u.run("run", "mods/noop.wasm")
	u.run("call", "mods/plugin_basic.wasm", "upper", "--input-text", "hi")
	u.run("batch", "mods/echo.wasm", "--in", in, "--out", filepath.Join(u.work, "out"))
	stray := filepath.Join(u.xdg, "stint", "other", "stray")
	require.NoError(t, os.MkdirAll(filepath.Dir(stray), 0o700))
	require.NoError(t, os.WriteFile(stray, []byte("?"), 0o600))

	l := u.list()
	require.Len(t, l.Entries, 7, "three modules, prepared and compiled, and the stray file")
	byModule := map[string][]string{}
	for _, e := range l.Entries {
		byModule[e.Module] = append(byModule[e.Module], e.Kind)
	}
	for _, n := range []string{"noop", "echo", "plugin_basic"} {
		require.ElementsMatch(t, []string{"prepared", "compiled"}, byModule[filepath.Join(mods, n+".wasm")], "%s: %v", n, byModule)
	}
	require.Equal(t, []string{"other"}, byModule[""])

	text := u.run("cache", "list")
	lines := strings.Split(strings.TrimSpace(text), "\n")
	require.Len(t, lines, 9, text)
	require.Regexp(t, `^KIND +SIZE +LAST USED +MODULE +ENTRY$`, lines[1])
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		module, entry := f[len(f)-2], f[len(f)-1]
		if entry == "other/stray" {
			require.Equal(t, "-", module, l)
			continue
		}
		require.Equal(t, mods, filepath.Dir(module), l)
	}

	// Everything but echo's files aged: prune --all deletes them and the
	// records of noop and plugin_basic, and keeps echo's.
	old := time.Now().Add(-2 * time.Hour)
	echoRecord := ""
	for _, e := range l.Entries {
		if e.Module == filepath.Join(mods, "echo.wasm") {
			continue
		}
		p := filepath.Join(u.xdg, "stint", filepath.FromSlash(e.Entry))
		require.NoError(t, os.Chtimes(p, old, old))
	}
	names, err := filepath.Glob(filepath.Join(u.xdg, "stint", "stint-names", "*"))
	require.NoError(t, err)
	require.Len(t, names, 3, "a record per module")
	for _, p := range names {
		require.NoError(t, os.Chtimes(p, old, old))
		if strings.Contains(string(readFile(t, p)), "echo.wasm") {
			echoRecord = p
		}
	}
	require.NotEmpty(t, echoRecord)
	out := u.run("cache", "prune", "--all")
	require.Contains(t, out, "5 files deleted")
	names, err = filepath.Glob(filepath.Join(u.xdg, "stint", "stint-names", "*"))
	require.NoError(t, err)
	require.Equal(t, []string{echoRecord}, names, "the records of modules whose entries are all deleted go with them")
	l = u.list()
	require.Len(t, l.Entries, 2)
	for _, e := range l.Entries {
		require.Equal(t, filepath.Join(mods, "echo.wasm"), e.Module)
	}
}
