package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/bytesize"
	"github.com/stint-run/stint/internal/teststore"
	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/postgres"
	"github.com/stint-run/stint/tasks/sqlite"
)

// runInProcess calls run as main would, capturing the output.
func runInProcess(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), exitCode(err)
}

func configLine(t *testing.T, out, key string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == key {
			return l
		}
	}
	t.Fatalf("no %s in:\n%s", key, out)
	return ""
}

// TestConfigPrecedence: flags win over env, env over the file, the file
// over the defaults; `runner config` names each source.
func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "runner.yaml")
	require.NoError(t, os.WriteFile(file, []byte("shutdown:\n  budget: 20s\n  drain: 4s\nlimits:\n  memory: 32MiB\nworkers: 3\n"), 0o644))
	t.Setenv("RUNNER_SHUTDOWN_DRAIN", "3s")
	t.Setenv("RUNNER_LIMITS_TIMEOUT", "2m")
	out, stderr, code := runInProcess(t, "config", "--config", file, "--limits-timeout", "30s")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, configLine(t, out, "shutdown.budget"), "20s")
	require.Contains(t, configLine(t, out, "shutdown.budget"), "file "+file)
	require.Contains(t, configLine(t, out, "shutdown.drain"), "3s")
	require.Contains(t, configLine(t, out, "shutdown.drain"), "env RUNNER_SHUTDOWN_DRAIN")
	require.Contains(t, configLine(t, out, "limits.timeout"), "30s")
	require.Contains(t, configLine(t, out, "limits.timeout"), "flag --limits-timeout")
	require.Contains(t, configLine(t, out, "limits.memory"), "32MiB")
	require.Contains(t, configLine(t, out, "workers"), "3")
	require.Contains(t, configLine(t, out, "shutdown.cancel"), "default")
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.yaml")
	require.NoError(t, os.WriteFile(unknown, []byte("shutdown:\n  bugdet: 20s\n"), 0o644))
	broken := filepath.Join(dir, "broken.yaml")
	require.NoError(t, os.WriteFile(broken, []byte("shutdown: [unclosed\n"), 0o644))
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"config", "--config", unknown}, `unknown key "shutdown.bugdet"`},
		{[]string{"config", "--config", broken}, "config file"},
		{[]string{"config", "--config", filepath.Join(dir, "missing.yaml")}, "config file"},
		{[]string{"config", "--workers", "zero"}, "workers"},
		{[]string{"config", "--workers", "0"}, "workers"},
		{[]string{"config", "--max-compiled-modules", "0"}, "max_compiled_modules"},
		{[]string{"config", "--max-compiled-modules", "-2"}, "max_compiled_modules"},
		{[]string{"config", "--limits-memory", "2GiB", "--limits-max-memory", "1GiB"}, "over limits.max_memory"},
		{[]string{"config", "--limits-max-memory", "8GiB"}, "wasm32 maximum"},
		{[]string{"config", "--limits-stdout", "128MiB"}, "limits.stdout (128MiB) is over limits.max_stdout (64MiB)"},
		{[]string{"config", "--limits-checkpoint", "2MiB", "--limits-max-checkpoint", "1MiB"}, "over limits.max_checkpoint"},
		{[]string{"run", fixture(t, "noop"), "--stdout-cap", "1GiB"}, "stdout 1GiB is over the runner's maximum 64MiB"},
		{[]string{"submit", fixture(t, "noop"), "--data-dir", dir, "--stderr-cap", "lots"}, "--stderr-cap"},
		{[]string{"submit", fixture(t, "noop"), "--data-dir", dir, "--checkpoint-cap", "0"}, "want a positive size"},
		{[]string{"config", "--limits-snapshot", "1GiB"}, "limits.snapshot: 1GiB is over 1000000000 bytes, the largest snapshot a store takes"},
		{[]string{"config", "--limits-snapshot", "0"}, "limits.snapshot: must not be 0"},
		{[]string{"config", "--limits-max-args", "2000"}, "limits.max_args: 2000 is out of range: want 1 to 1024 (the most any store takes)"},
		{[]string{"config", "--limits-max-env-bytes", "1MiB"}, "limits.max_env_bytes: 1MiB is out of range: want 1 to 256KiB"},
		{[]string{"config", "--limits-max-queue", "0"}, "limits.max_queue: 0 is out of range"},
		{[]string{"config", "--limits-max-mounts", "many"}, "limits.max_mounts: want a number"},
		{[]string{"submit", fixture(t, "noop"), "--data-dir", dir, "--limits-max-env", "1", "--env", "A=1", "--env", "B=2"},
			"env: 2 entries, over this runner's limits.max_env of 1 entries"},
		{[]string{"submit", fixture(t, "noop"), "--data-dir", dir, "--queue", strings.Repeat("q", 129)},
			"queue: 129 bytes, over this runner's limits.max_queue of 128 bytes"},
		{[]string{"run", fixture(t, "noop"), "--limits-max-args", "2", "--", "a", "b", "c"}, "args: 3 entries, over this runner's limits.max_args of 2 entries"},
		{[]string{"config", "--shutdown-budget", "-1s"}, "must not be negative"},
		{[]string{"config", "--lease", "500ms"}, "lease: 500ms is too short: want at least 1s"},
		{[]string{"config", "--lease", "-2s"}, "must not be negative"},
		{[]string{"config", "--log-level", "loud"}, "log.level"},
		{[]string{"config", "--sandbox-interrupt", "epoch"}, `sandbox.interrupt: "epoch": want checks (the default) or wazero`},
		{[]string{"config", "--queues", "a=x"}, "queues"},
		{[]string{"config", "--shutdown-hooks", "db=1s"}, "shutdown.hooks"},
		{[]string{"config", "--shutdown-hooks", "store=soon"}, "shutdown.hooks"},
		{[]string{"run"}, "accepts 1 arg"},
		{[]string{"bogus"}, "unknown command"},
	}
	for _, c := range cases {
		_, stderr, code := runInProcess(t, c.args...)
		require.Equal(t, 2, code, "%v: %s", c.args, stderr)
		require.Contains(t, stderr, c.msg, "%v", c.args)
	}
}

// TestSnapshotLimitDefault: limits.snapshot's default is a snapshot both
// stores take (the config refuses one over their cap: TestConfigErrors).
func TestSnapshotLimitDefault(t *testing.T) {
	t.Parallel()
	require.LessOrEqual(t, pool.DefaultMaxSnapshot, min(sqlite.MaxSnapshot, postgres.MaxSnapshot))
	require.Equal(t, sqlite.MaxSnapshot, postgres.MaxSnapshot, "config.go refuses limits.snapshot over sqlite.MaxSnapshot for both")
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	out, _, code := runInProcess(t, "version")
	require.Equal(t, 0, code)
	require.True(t, strings.HasPrefix(out, "runner "))
	require.Contains(t, out, "go      "+runtime.Version())
	out, _, code = runInProcess(t, "run", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Exit codes:")
	out, _, code = runInProcess(t, "tasks", "prune", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "checkpoint, snapshot and attempt history")
	require.Contains(t, out, "suspended or interrupted with a snapshot")
	out, _, code = runInProcess(t, "serve", "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "cooperative stop")
	out, _, code = runInProcess(t, "--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "6  submit --wait: --wait-timeout passed first", "runner --help lists the exit codes, as README says")
}

func TestUnits(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"64MiB": 64 << 20, "512KiB": 512 << 10, "1GiB": 1 << 30, "10MB": 10e6, "100": 100, "1.5KiB": 1536,
		"12mb": 12e6, "64mib": 64 << 20, "2kib": 2048, "1e3": 1000, "7b": 7} {
		got, err := parseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "MiB", "-1", "lots", "NaN", "nan", "Inf", "+Inf", "1e30", "9EiB", "0x10", "1_000", "1e19", "16EiB"} {
		_, err := parseSize(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, "64MiB", bytesize.Format(64<<20))
	require.Equal(t, "1000", bytesize.Format(1000))
	for in, want := range map[string]time.Duration{"0": 0, "30s": 30 * time.Second, "1h30m": 90 * time.Minute,
		"7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour, " 2d ": 48 * time.Hour} {
		got, err := parseDuration(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "soon", "d", "7", "-1d", "1.5d", "2d-1h", "1dd", "99999999d"} {
		_, err := parseDuration(bad)
		require.ErrorContains(t, err, "invalid duration", bad)
	}
}

// TestSubmitMountOutsideAllowList: a queued task may only mount what
// mounts.allow allows (deny by default); nothing is stored when refused.
func TestSubmitMountOutsideAllowList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--mount", "/etc:/etc", "--data-dir", dir)
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "mounts.allow")
	_, err := os.Stat(filepath.Join(dir, "stint.db"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestSubmitOutputCaps: --stdout-cap, --stderr-cap and --checkpoint-cap are
// stored with the task; over limits.max_* they are refused and nothing is
// stored.
func TestSubmitOutputCaps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir,
		"--stdout-cap", "8MiB", "--stderr-cap", "1KiB", "--checkpoint-cap", "2MiB")
	require.Equal(t, 0, code, stderr)
	s := teststore.Open(t, dir)
	task, err := s.Get(context.Background(), testutil.TaskID(t, out))
	require.NoError(t, err)
	require.Equal(t, tasks.Limits{Stdout: 8 << 20, Stderr: 1 << 10, Checkpoint: 2 << 20}, task.Limits)
	out, stderr, code = runInProcess(t, "tasks", "show", fmt.Sprint(task.ID), "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, out, "limits:      stdout 8MiB, stderr 1KiB, checkpoint 2MiB (the rest: the runner's defaults)")

	_, stderr, code = runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir, "--stdout-cap", "65MiB")
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "stdout 65MiB is over the runner's maximum 64MiB")
	require.Contains(t, stderr, "limits.max_*")
	all, err := s.List(context.Background(), tasks.ListFilter{})
	require.NoError(t, err)
	require.Len(t, all, 1)
}

// TestSubmitInputCap: a queued task's input is capped by limits.max_input,
// from a file or from stdin, with a message that says what to do instead;
// nothing is stored. An input at the cap is taken whole.
func TestSubmitInputCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(t.TempDir(), "big.txt")
	require.NoError(t, os.WriteFile(big, bytes.Repeat([]byte("x"), 1025), 0o644))
	_, stderr, code := runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir, "--limits-max-input", "1KiB", "--input", big)
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--input "+big+": more than 1KiB (limits.max_input 1KiB); for big data, mount a directory")

	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"submit", fixture(t, "noop"), "--data-dir", dir, "--limits-max-input", "1KiB", "--input", "-"},
		bytes.NewReader(bytes.Repeat([]byte("y"), 2000)), &out, &errb)
	require.Equal(t, 2, exitCode(err), errb.String())
	require.Contains(t, errb.String(), "--input -: more than 1KiB")
	s := teststore.Open(t, dir)
	all, err := s.List(context.Background(), tasks.ListFilter{})
	require.NoError(t, err)
	require.Empty(t, all)

	out.Reset()
	errb.Reset()
	err = run(context.Background(), []string{"submit", fixture(t, "noop"), "--data-dir", dir, "--limits-max-input", "1KiB", "--input", "-"},
		bytes.NewReader(bytes.Repeat([]byte("z"), 1024)), &out, &errb)
	require.Equal(t, 0, exitCode(err), errb.String())
	task, err := s.Get(context.Background(), testutil.TaskID(t, out.String()))
	require.NoError(t, err)
	require.Equal(t, 1024, task.InputSize)

	_, stderr, code = runInProcess(t, "submit", fixture(t, "noop"), "--data-dir", dir, "--input", t.TempDir())
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "is a directory")
}

// TestRunStreamsInputFile: runner run gives the guest its --input file as
// stdin, whatever limits.max_input says (it streams it, holding none of it).
func TestRunStreamsInputFile(t *testing.T) {
	t.Setenv("RUNNER_LIMITS_MAX_INPUT", "1KiB") // run has no --limits-max-input: it does not use it
	in := filepath.Join(t.TempDir(), "in.txt")
	content := strings.Repeat("stream me\n", 300)
	require.NoError(t, os.WriteFile(in, []byte(content), 0o644))
	out, stderr, code := runInProcess(t, "run", fixture(t, "echo"), "--input", in,
		"--data-dir", t.TempDir())
	require.Equal(t, 0, code, stderr)
	require.Equal(t, content, out)
	_, stderr, code = runInProcess(t, "run", fixture(t, "echo"), "--input", in+".missing", "--data-dir", t.TempDir())
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "--input:")
}

// TestTasksJSON: tasks list --json and tasks show --json print what the
// HTTP API returns: tasks without their input and result bytes, sizes
// instead; unset times left out.
func TestTasksJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"submit", fixture(t, "echo"), "--data-dir", dir, "--input", "-"},
		strings.NewReader("hi"), &out, &errb)
	require.Equal(t, 0, exitCode(err), errb.String())
	id := testutil.TaskID(t, out.String())

	list, stderr, code := runInProcess(t, "tasks", "list", "--json", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	var ts []map[string]any
	require.NoError(t, json.Unmarshal([]byte(list), &ts), list)
	require.Len(t, ts, 1)
	require.Equal(t, float64(id), ts[0]["id"])
	require.Equal(t, float64(2), ts[0]["input_size"])
	require.NotContains(t, ts[0], "input")
	require.NotContains(t, ts[0], "finished_at", "unset times are left out")
	require.NotContains(t, ts[0], "lease_expiry")

	show, stderr, code := runInProcess(t, "tasks", "show", fmt.Sprint(id), "--json", "--data-dir", dir)
	require.Equal(t, 0, code, stderr)
	var got struct {
		Task     map[string]any  `json:"task"`
		Attempts []tasks.Attempt `json:"attempts"`
	}
	require.NoError(t, json.Unmarshal([]byte(show), &got), show)
	require.NotContains(t, got.Task, "input", "the input's size, not the input")
	require.Equal(t, float64(2), got.Task["input_size"])
	require.Equal(t, "queued", got.Task["state"])
	require.NotNil(t, got.Attempts)
	require.Empty(t, got.Attempts)
	require.Contains(t, show, `"attempts": []`)
}

// TestConfigurationDocCoversEveryKey: docs/configuration.md has a row for
// every key, with its environment variable, flag and default.
func TestConfigurationDocCoversEveryKey(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(testwasm.RepoRoot(t), "docs", "configuration.md"))
	require.NoError(t, err)
	for _, k := range configKeys {
		def := "—"
		if k.def != "" {
			def = "`" + k.def + "`"
		}
		row := fmt.Sprintf("| `%s` | `%s` | `--%s` | %s |", k.name, envName(k.name), flagName(k.name), def)
		require.Contains(t, string(doc), row, "docs/configuration.md lacks (or has a stale) row for %s", k.name)
	}
}

// TestFlagsWhereTheyApply: every command has the persistent flags (config
// file, data directory, store, log); a key's other flag only on the
// commands that use it; its variable works with every command.
func TestFlagsWhereTheyApply(t *testing.T) {
	t.Parallel()
	out, _, code := runInProcess(t, "version", "--help")
	require.Equal(t, 0, code)
	for _, f := range []string{"--config", "--data-dir", "--store", "--store-sync", "--log-level", "--log-format"} {
		require.Contains(t, out, f)
	}
	require.NotContains(t, out, "--http-addr")
	require.NotContains(t, out, "--limits-")
	require.Less(t, strings.Count(out, "\n"), 20, out)
	for _, c := range []struct {
		cmd       []string
		has, hasn []string
	}{
		{[]string{"serve"}, []string{"--http-addr", "--shutdown-budget", "--workers", "--limits-memory", "--sandbox-compile-timeout", "--mounts-allow"}, nil},
		{[]string{"run"}, []string{"--limits-memory", "--limits-max-memory", "--sandbox-compile-timeout"}, []string{"--http-addr", "--shutdown-budget", "--workers", "--limits-max-input", "--mounts-allow"}},
		{[]string{"submit"}, []string{"--limits-max-memory", "--limits-max-input", "--mounts-allow"}, []string{"--http-addr", "--shutdown-budget", "--workers", "--limits-memory ", "--sandbox-compile-timeout"}},
		{[]string{"tasks", "list"}, []string{"--data-dir", "--store"}, []string{"--http-addr", "--limits-memory", "--workers"}},
	} {
		out, _, code := runInProcess(t, append(c.cmd, "--help")...)
		require.Equal(t, 0, code)
		for _, f := range c.has {
			require.Contains(t, out, f, "%v", c.cmd)
		}
		for _, f := range c.hasn {
			require.NotContains(t, out, f, "%v", c.cmd)
		}
	}
	_, stderr, code := runInProcess(t, "tasks", "list", "--http-addr", "")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "unknown flag: --http-addr")
}

// TestConfigJSON: config --json gives each key its value and source.
func TestConfigJSON(t *testing.T) {
	t.Setenv("RUNNER_SHUTDOWN_DRAIN", "3s")
	t.Setenv("RUNNER_HTTP_TOKEN", "secret")
	out, stderr, code := runInProcess(t, "config", "--json", "--queues", "a,b=2")
	require.Equal(t, 0, code, stderr)
	var got map[string]struct {
		Value  any    `json:"value"`
		Source string `json:"source"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Len(t, got, len(configKeys))
	require.Equal(t, "3s", got["shutdown.drain"].Value)
	require.Equal(t, "env RUNNER_SHUTDOWN_DRAIN", got["shutdown.drain"].Source)
	require.Equal(t, []any{"a", "b=2"}, got["queues"].Value)
	require.Equal(t, "flag --queues", got["queues"].Source)
	require.Equal(t, "(set)", got["http.token"].Value)
	require.Equal(t, "default", got["shutdown.budget"].Source)
	require.NotContains(t, out, "secret")
}

// TestConfigHidesStorePassword: runner config shows a password in the
// store URL, in its user info or a parameter, as "(set)", in both forms.
func TestConfigHidesStorePassword(t *testing.T) {
	t.Setenv("RUNNER_STORE", "postgres://app:s3cret@db:5432/stint?sslmode=disable&sslpassword=s3cret")
	const want = "postgres://app:(set)@db:5432/stint?sslmode=disable&sslpassword=(set)"
	out, stderr, code := runInProcess(t, "config", "--json")
	require.Equal(t, 0, code, stderr)
	var got map[string]struct{ Value any }
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	require.Equal(t, want, got["store"].Value)
	require.NotContains(t, out, "s3cret")
	out, stderr, code = runInProcess(t, "config")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, configLine(t, out, "store"), want)
	require.NotContains(t, out, "s3cret")
}

// TestEmptyVariableCounts: an empty RUNNER_* variable is a value, not
// "unset": each key either takes its documented empty meaning or is
// refused with an error naming it.
func TestEmptyVariableCounts(t *testing.T) {
	emptyOK := map[string]bool{"store": true, "owner": true, "workers": true, "queues": true, "sandbox.module_limits": true,
		"http.addr": true, "http.token": true, "shutdown.hooks": true, "mounts.allow": true, "log.format": true,
		"sandbox.cache_dir": true, "tenant_weights": true, "tenant_max_running": true}
	for _, k := range configKeys {
		t.Run(k.name, func(t *testing.T) {
			t.Setenv(envName(k.name), "")
			out, stderr, code := runInProcess(t, "config", "--json")
			if emptyOK[k.name] {
				require.Equal(t, 0, code, stderr)
				var got map[string]struct{ Source string }
				require.NoError(t, json.Unmarshal([]byte(out), &got))
				require.Equal(t, "env "+envName(k.name), got[k.name].Source)
				return
			}
			require.Equal(t, 2, code, "an empty %s is accepted", envName(k.name))
			require.Contains(t, stderr, k.name+":")
		})
	}
}

// TestStoreSyncSetting: store_sync comes from the flag, the variable or
// the file (next to store), and only normal or full are taken.
func TestStoreSyncSetting(t *testing.T) {
	cfg := func(args ...string) map[string]struct{ Value any } {
		t.Helper()
		out, stderr, code := runInProcess(t, append([]string{"config", "--json"}, args...)...)
		require.Equal(t, 0, code, stderr)
		var got map[string]struct{ Value any }
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		return got
	}
	require.Equal(t, "normal", cfg()["store_sync"].Value)
	require.Equal(t, "full", cfg("--store-sync", "full")["store_sync"].Value)
	file := filepath.Join(t.TempDir(), "runner.yaml")
	require.NoError(t, os.WriteFile(file, []byte("store: /srv/stint.db\nstore_sync: full\n"), 0o644))
	got := cfg("--config", file)
	require.Equal(t, "full", got["store_sync"].Value)
	require.Equal(t, "/srv/stint.db", got["store"].Value)

	t.Setenv("RUNNER_STORE_SYNC", "full")
	require.Equal(t, "full", cfg("--store", "/srv/other.db")["store_sync"].Value)
	_, stderr, code := runInProcess(t, "tasks", "list", "--store-sync", "FULL", "--data-dir", t.TempDir())
	require.Equal(t, exitUsage, code)
	require.Contains(t, stderr, `store_sync: want normal or full, got "FULL"`)
}

// TestConfigInitLoadsBackTheDefaults: the file config init writes, loaded
// as the runner loads a file, yields exactly the configuration of no file
// at all, and names every key of the table.
func TestConfigInitLoadsBackTheDefaults(t *testing.T) {
	for _, k := range configKeys {
		t.Setenv(envName(k.name), "") // restored after the test
		require.NoError(t, os.Unsetenv(envName(k.name)))
	}
	t.Setenv("RUNNER_CONFIG", "")
	require.NoError(t, os.Unsetenv("RUNNER_CONFIG"))
	path := filepath.Join(t.TempDir(), "runner.yaml")
	require.NoError(t, os.WriteFile(path, []byte(configTemplate()), 0o600))
	v, err := newViper(pflag.NewFlagSet("none", pflag.ContinueOnError), path)
	require.NoError(t, err)
	for _, k := range configKeys {
		require.True(t, v.InConfig(k.name), "%s is in the file", k.name)
	}
	fromFile, err := loadConfig(v)
	require.NoError(t, err)
	require.True(t, reflect.DeepEqual(defaultConfig(t), fromFile), "%+v\n%+v", defaultConfig(t), fromFile)
}

// TestConfigColumns: runner config's columns stay aligned whatever the
// length of a key or value: every source starts at the same column.
func TestConfigColumns(t *testing.T) {
	t.Parallel()
	long := "postgres://user@db.internal.example:5432/stint_production_queue?sslmode=verify-full"
	out, stderr, code := runInProcess(t, "config", "--store", long)
	require.Equal(t, 0, code, stderr)
	col := -1
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		i := strings.LastIndex(line, "  ") // the source follows the last gap
		require.Positive(t, i, "a line without its source: %q", line)
		if col < 0 {
			col = i
		}
		require.Equal(t, col, i, "the source column moved:\n%s", out)
	}
}
