package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/stint-run/stint/shutdown"
)

// budget is the default shutdown budget from the code itself, checked
// against the CLI's default for shutdown.budget when that can be read.
func budget(t *testing.T) time.Duration {
	t.Helper()
	b := shutdown.DefaultBudget
	if cli, ok := cliBudget(t); ok {
		require.Equal(t, b, cli, "runner's default shutdown.budget (cmd/runner) differs from shutdown.DefaultBudget")
	} else {
		t.Log("the CLI's default shutdown.budget was not found in cmd/runner; using shutdown.DefaultBudget alone")
	}
	return b
}

// cliBudget is the CLI's default for shutdown.budget, when it is written
// as a literal (cliDefault).
func cliBudget(t *testing.T) (time.Duration, bool) {
	t.Helper()
	return cliDefault(t, "shutdown.budget")
}

// cliDefault finds, in cmd/runner's sources, the composite literal that
// starts with the string key and returns the duration that follows it,
// when that is a string literal (the table of keys, config.go).
func cliDefault(t *testing.T, key string) (time.Duration, bool) {
	t.Helper()
	files, err := filepath.Glob("../cmd/runner/*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		var found time.Duration
		ast.Inspect(file, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok || len(cl.Elts) < 2 || found != 0 {
				return found == 0
			}
			k, ok1 := cl.Elts[0].(*ast.BasicLit)
			v, ok2 := cl.Elts[1].(*ast.BasicLit)
			if !ok1 || !ok2 || k.Kind != token.STRING || v.Kind != token.STRING || k.Value != strconv.Quote(key) {
				return true
			}
			s, err := strconv.Unquote(v.Value)
			require.NoError(t, err)
			found, err = time.ParseDuration(s)
			require.NoError(t, err, "cmd/runner's default %s %q", key, s)
			return false
		})
		if found != 0 {
			return found, true
		}
	}
	return 0, false
}

// envBudget is RUNNER_SHUTDOWN_BUDGET's value in a file's settings, or the
// default budget: a file that raises the budget must raise its grace too.
func envBudget(t *testing.T, def time.Duration, value string, set bool) time.Duration {
	t.Helper()
	if !set {
		return def
	}
	d, err := time.ParseDuration(value)
	require.NoError(t, err, "RUNNER_SHUTDOWN_BUDGET=%q", value)
	return d
}

// unit is a parsed systemd unit file: section → key → values (a key may
// repeat).
type unit map[string]map[string][]string

// parseUnit reads a unit file as systemd does: [Section] headers,
// Key=Value lines, # and ; comments, a trailing backslash continuing a
// line. Anything else is an error.
func parseUnit(r io.Reader) (unit, error) {
	u := unit{}
	section := ""
	sc := bufio.NewScanner(r)
	n, pending := 0, ""
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if pending == "" && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			pending += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		line, pending = pending+line, ""
		if strings.HasPrefix(line, "[") {
			if !strings.HasSuffix(line, "]") || len(line) < 3 {
				return nil, fmt.Errorf("line %d: bad section header %q", n, line)
			}
			section = line[1 : len(line)-1]
			if _, dup := u[section]; dup {
				return nil, fmt.Errorf("line %d: section [%s] twice", n, section)
			}
			u[section] = map[string][]string{}
			continue
		}
		if section == "" {
			return nil, fmt.Errorf("line %d: %q before any section", n, line)
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("line %d: want Key=Value, got %q", n, line)
		}
		u[section][k] = append(u[section][k], strings.TrimSpace(v))
	}
	if pending != "" {
		return nil, errors.New("the file ends in a continued line")
	}
	return u, sc.Err()
}

// one returns the single value of key in section.
func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u[section][key]
	require.Len(t, vs, 1, "[%s] %s", section, key)
	return vs[0]
}

var spanRE = regexp.MustCompile(`^(\d+)\s*(us|usec|ms|msec|s|sec|seconds?|m|min|minutes?|h|hr|hours?|)$`)

// parseTimespan parses a systemd time span ("35s", "1min 30s", "90": a
// bare number is seconds).
func parseTimespan(s string) (time.Duration, error) {
	units := map[string]time.Duration{"us": time.Microsecond, "usec": time.Microsecond, "ms": time.Millisecond,
		"msec": time.Millisecond, "": time.Second, "s": time.Second, "sec": time.Second, "second": time.Second,
		"seconds": time.Second, "m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
		"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour}
	var d time.Duration
	parts := regexp.MustCompile(`(\d+\s*[a-z]*)`).FindAllString(s, -1)
	if len(parts) == 0 || strings.Join(strings.Fields(s), "") != strings.ReplaceAll(strings.Join(parts, ""), " ", "") {
		return 0, fmt.Errorf("time span %q", s)
	}
	for _, p := range parts {
		m := spanRE.FindStringSubmatch(strings.TrimSpace(p))
		if m == nil {
			return 0, fmt.Errorf("time span %q: unknown part %q", s, p)
		}
		n, _ := strconv.Atoi(m[1])
		d += time.Duration(n) * units[m[2]]
	}
	return d, nil
}

func TestTimespan(t *testing.T) {
	for in, want := range map[string]time.Duration{"35s": 35 * time.Second, "90": 90 * time.Second,
		"1min 30s": 90 * time.Second, "2m": 2 * time.Minute, "500ms": 500 * time.Millisecond} {
		got, err := parseTimespan(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "soon", "35 parsecs", "-5s"} {
		_, err := parseTimespan(bad)
		require.Error(t, err, bad)
	}
}

func TestUnitParser(t *testing.T) {
	u, err := parseUnit(strings.NewReader("# c\n[Service]\nExecStart=/bin/a \\\n  --b\nEnvironment=A=1\nEnvironment=B=2\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"/bin/a  --b"}, u["Service"]["ExecStart"])
	require.Equal(t, []string{"A=1", "B=2"}, u["Service"]["Environment"])
	for _, bad := range []string{"Key=1\n", "[Service\n", "[Service]\nnot a setting\n", "[A]\n[A]\n", "[A]\nK=\\\n"} {
		_, err := parseUnit(strings.NewReader(bad))
		require.Error(t, err, bad)
	}
}

func TestSystemdUnit(t *testing.T) {
	b := budget(t)
	f, err := os.Open("systemd/stint-runner.service")
	require.NoError(t, err)
	defer f.Close()
	u, err := parseUnit(f)
	require.NoError(t, err)
	for _, s := range []string{"Unit", "Service", "Install"} {
		require.Contains(t, u, s)
	}
	require.Contains(t, u.one(t, "Service", "ExecStart"), "runner serve")
	require.Equal(t, "SIGTERM", u.one(t, "Service", "KillSignal"))
	require.Equal(t, "mixed", u.one(t, "Service", "KillMode"))
	env := map[string]string{}
	for _, e := range u["Service"]["Environment"] {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	v, set := env["RUNNER_SHUTDOWN_BUDGET"]
	want := envBudget(t, b, v, set)
	stop, err := parseTimespan(u.one(t, "Service", "TimeoutStopSec"))
	require.NoError(t, err)
	require.Greater(t, stop, want, "TimeoutStopSec must exceed the shutdown budget")
	// Hardening that fits a runner of untrusted code.
	for k, v := range map[string]string{"NoNewPrivileges": "yes", "ProtectSystem": "strict", "PrivateDevices": "yes",
		"DynamicUser": "yes", "CapabilityBoundingSet": "", "StateDirectory": "stint"} {
		require.Equal(t, v, u.one(t, "Service", k), k)
	}
	// wazero maps compiled code executable: this would break every task.
	require.NotContains(t, u["Service"], "MemoryDenyWriteExecute")
	require.Equal(t, "/var/lib/stint", env["RUNNER_DATA_DIR"])

	// runner serve speaks sd_notify (cmd/runner/sdnotify.go): READY=1 once
	// it serves, WATCHDOG=1 while healthy. A frozen runner is ended and
	// started again: the watchdog's SIGABRT counts as a failure.
	require.Equal(t, "notify", u.one(t, "Service", "Type"))
	require.Equal(t, "main", u.one(t, "Service", "NotifyAccess"))
	require.Contains(t, []string{"on-failure", "on-abnormal", "on-watchdog", "always"}, u.one(t, "Service", "Restart"))
	wd, err := parseTimespan(u.one(t, "Service", "WatchdogSec"))
	require.NoError(t, err)
	// The runner pings every WatchdogSec/2 and gives its health check a
	// quarter; under 10s a long GC pause on a loaded machine could restart
	// a healthy runner, over a few minutes a frozen one holds its host's
	// tasks (SQLite) that long.
	require.GreaterOrEqual(t, wd, 10*time.Second, "WatchdogSec")
	require.LessOrEqual(t, wd, 5*time.Minute, "WatchdogSec")
	require.NotContains(t, u["Service"], "WatchdogSignal", "SIGABRT, the default, makes Go print every goroutine's stack")
	// Type=notify: starting lasts until READY=1, which a runner waiting
	// for its store (PostgreSQL not up yet) sends only once it is reached.
	storeWait, ok := cliDefault(t, "store_wait")
	require.True(t, ok, "cmd/runner's default store_wait not found")
	if v, set := env["RUNNER_STORE_WAIT"]; set {
		storeWait, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	start, err := parseTimespan(u.one(t, "Service", "TimeoutStartSec"))
	require.NoError(t, err)
	require.Greater(t, start, storeWait, "TimeoutStartSec must exceed store_wait")
}

// TestSystemdAnalyzeVerify: systemd itself reads the unit without a
// warning (an unknown or misspelled key, a bad value), where
// systemd-analyze is installed. ExecStart points at /bin/true: the runner
// is not installed here.
func TestSystemdAnalyzeVerify(t *testing.T) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	b, err := os.ReadFile("systemd/stint-runner.service")
	require.NoError(t, err)
	b = bytes.ReplaceAll(b, []byte("ExecStart=/usr/local/bin/runner"), []byte("ExecStart=/bin/true"))
	unit := filepath.Join(t.TempDir(), "stint-runner.service")
	require.NoError(t, os.WriteFile(unit, b, 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "verify", unit).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// Its warnings about the unit name the file; anything else is about
	// this machine.
	for _, l := range strings.Split(string(out), "\n") {
		require.NotContains(t, l, unit, "systemd-analyze verify warns about the unit")
	}
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, path)
		if d != nil {
			docs = append(docs, d)
		}
	}
	require.NotEmpty(t, docs, path)
	return docs
}

// at walks v by map keys and list indexes ("spec", "containers", 0).
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "%v: not a map at %v", path, path[:i])
			v, ok = m[k]
			require.True(t, ok, "%v: no %q", path, k)
		case int:
			l, ok := v.([]any)
			require.True(t, ok, "%v: not a list at %v", path, path[:i])
			require.Greater(t, len(l), k, "%v", path)
			v = l[k]
		}
	}
	return v
}

func TestKubernetes(t *testing.T) {
	b := budget(t)
	byKind := map[string]map[string]any{}
	for _, f := range []string{"kubernetes/runner.yaml", "kubernetes/secret.example.yaml"} {
		for _, d := range yamlDocs(t, f) {
			kind, _ := d["kind"].(string)
			require.NotEmpty(t, kind, "%s: a document without kind", f)
			require.NotEmpty(t, d["apiVersion"], "%s: %s without apiVersion", f, kind)
			require.NotContains(t, byKind, kind)
			byKind[kind] = d
		}
	}
	dep := byKind["Deployment"]
	require.NotNil(t, dep, "no Deployment")
	require.Equal(t, "apps/v1", dep["apiVersion"])
	pod := at(t, dep, "spec", "template", "spec")
	require.Equal(t, at(t, dep, "spec", "selector", "matchLabels"), at(t, dep, "spec", "template", "metadata", "labels"))
	c := at(t, pod, "containers", 0)
	env := map[string]map[string]any{}
	for _, e := range at(t, c, "env").([]any) {
		e := e.(map[string]any)
		env[e["name"].(string)] = e
	}
	v, set := env["RUNNER_SHUTDOWN_BUDGET"]["value"].(string)
	want := envBudget(t, b, v, set)
	grace, ok := at(t, pod, "terminationGracePeriodSeconds").(int)
	require.True(t, ok, "terminationGracePeriodSeconds is not an integer")
	require.Greater(t, time.Duration(grace)*time.Second, want, "terminationGracePeriodSeconds must exceed the shutdown budget")

	require.Equal(t, "/readyz", at(t, c, "readinessProbe", "httpGet", "path"))
	require.Equal(t, "/healthz", at(t, c, "livenessProbe", "httpGet", "path"))
	require.Equal(t, "http", at(t, c, "readinessProbe", "httpGet", "port"))
	require.Equal(t, "http", at(t, c, "livenessProbe", "httpGet", "port"))
	// Liveness restarts a frozen runner, not a slow one: it has not
	// answered /healthz for a window of 20s to 2min (the systemd unit's
	// WatchdogSec is of the same order), each probe given 2s or more.
	period, ok1 := at(t, c, "livenessProbe", "periodSeconds").(int)
	failures, ok2 := at(t, c, "livenessProbe", "failureThreshold").(int)
	probeTimeout, ok3 := at(t, c, "livenessProbe", "timeoutSeconds").(int)
	require.True(t, ok1 && ok2 && ok3, "the liveness probe's periodSeconds, failureThreshold and timeoutSeconds are integers")
	window := time.Duration(period*failures) * time.Second
	require.GreaterOrEqual(t, window, 20*time.Second, "a liveness window this short restarts runners in a long GC pause")
	require.LessOrEqual(t, window, 2*time.Minute, "a liveness window this long leaves a frozen runner in place")
	require.GreaterOrEqual(t, probeTimeout, 2, "liveness timeoutSeconds")
	require.Less(t, probeTimeout, period, "liveness timeoutSeconds under periodSeconds")
	require.Equal(t, "http", at(t, c, "ports", 0, "name"))
	port := at(t, c, "ports", 0, "containerPort").(int)
	require.Equal(t, fmt.Sprintf("0.0.0.0:%d", port), env["RUNNER_HTTP_ADDR"]["value"])
	require.Equal(t, []any{"serve"}, at(t, c, "args"))
	require.Equal(t, false, at(t, c, "securityContext", "allowPrivilegeEscalation"))
	require.Equal(t, true, at(t, pod, "securityContext", "runAsNonRoot"))

	// The DSN and the token come from the Secret, never inline.
	secret := byKind["Secret"]
	require.NotNil(t, secret, "no example Secret")
	for _, name := range []string{"RUNNER_STORE", "RUNNER_HTTP_TOKEN"} {
		require.NotContains(t, env[name], "value", name)
		ref := at(t, env[name], "valueFrom", "secretKeyRef")
		require.Equal(t, at(t, secret, "metadata", "name"), at(t, ref, "name"), name)
		at(t, secret, "stringData", at(t, ref, "key").(string))
	}
	require.True(t, strings.HasPrefix(at(t, secret, "stringData", "postgres-dsn").(string), "postgres://"))
	require.Equal(t, at(t, dep, "spec", "selector", "matchLabels"), at(t, byKind["Service"], "spec", "selector"))
}

func TestCompose(t *testing.T) {
	b := budget(t)
	docs := yamlDocs(t, "compose.yaml")
	require.Len(t, docs, 1)
	svc := at(t, docs[0], "services")
	r := at(t, svc, "runner")
	require.Equal(t, "SIGTERM", at(t, r, "stop_signal"))
	env := at(t, r, "environment").(map[string]any)
	v, set := env["RUNNER_SHUTDOWN_BUDGET"].(string)
	want := envBudget(t, b, v, set)
	grace, err := time.ParseDuration(at(t, r, "stop_grace_period").(string))
	require.NoError(t, err)
	require.Greater(t, grace, want, "stop_grace_period must exceed the shutdown budget")
	require.Equal(t, "deploy/Dockerfile", at(t, r, "build", "dockerfile"))
	_, err = os.Stat(filepath.Join(at(t, r, "build", "context").(string), at(t, r, "build", "dockerfile").(string)))
	require.NoError(t, err, "the build context and Dockerfile exist")
	require.Equal(t, "service_healthy", at(t, r, "depends_on", "postgres", "condition"))
	require.True(t, strings.HasPrefix(at(t, svc, "postgres", "image").(string), "postgres:"))
	require.Regexp(t, `^postgres://stint:\$\{POSTGRES_PASSWORD[^}]*\}@postgres:5432/stint\?`, env["RUNNER_STORE"])
	require.Contains(t, env["RUNNER_HTTP_TOKEN"], "${STINT_TOKEN")
}

// instruction is one Dockerfile instruction.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

var dockerInstructions = map[string]bool{"ADD": true, "ARG": true, "CMD": true, "COPY": true, "ENTRYPOINT": true,
	"ENV": true, "EXPOSE": true, "FROM": true, "HEALTHCHECK": true, "LABEL": true, "ONBUILD": true, "RUN": true,
	"SHELL": true, "STOPSIGNAL": true, "USER": true, "VOLUME": true, "WORKDIR": true}

// parseDockerfile splits a Dockerfile into instructions: comments dropped,
// backslash continuations joined, each instruction a known one.
func parseDockerfile(r io.Reader) ([]instruction, error) {
	var out []instruction
	sc := bufio.NewScanner(r)
	n, start, pending := 0, 0, ""
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "#") || (trim == "" && pending == "") {
			continue
		}
		if pending == "" {
			start = n
		}
		if strings.HasSuffix(trim, `\`) {
			pending += strings.TrimSuffix(trim, `\`) + " "
			continue
		}
		full := pending + trim
		pending = ""
		cmd, args, _ := strings.Cut(full, " ")
		cmd = strings.ToUpper(cmd)
		if !dockerInstructions[cmd] {
			return nil, fmt.Errorf("line %d: unknown instruction %q", start, cmd)
		}
		out = append(out, instruction{line: start, cmd: cmd, args: strings.TrimSpace(args)})
	}
	if pending != "" {
		return nil, errors.New("the file ends in a continued line")
	}
	return out, sc.Err()
}

func TestDockerfile(t *testing.T) {
	f, err := os.Open("Dockerfile")
	require.NoError(t, err)
	defer f.Close()
	ins, err := parseDockerfile(f)
	require.NoError(t, err)
	require.Equal(t, "FROM", ins[0].cmd, "the first instruction is FROM")
	// The final stage: from the last FROM on.
	last := 0
	var build []instruction
	for i, in := range ins {
		if in.cmd == "FROM" {
			last = i
		}
	}
	build, final := ins[:last], ins[last:]
	built := false
	for _, in := range build {
		if in.cmd == "RUN" && strings.Contains(in.args, "CGO_ENABLED=0 go build") && strings.Contains(in.args, "./cmd/runner") {
			built = true
		}
	}
	require.True(t, built, "a build stage runs CGO_ENABLED=0 go build ... ./cmd/runner (a static binary)")
	seen := map[string]string{}
	for _, in := range final {
		seen[in.cmd] = in.args
	}
	require.Equal(t, "SIGTERM", seen["STOPSIGNAL"])
	user := seen["USER"]
	require.NotEmpty(t, user, "the final stage sets USER")
	name, _, _ := strings.Cut(user, ":")
	require.NotContains(t, []string{"root", "0"}, name, "the runner does not run as root")
	// Exec form, so that the runner is PID 1 and gets SIGTERM itself.
	require.True(t, strings.HasPrefix(seen["ENTRYPOINT"], `["`), "ENTRYPOINT in exec form: %s", seen["ENTRYPOINT"])
	require.Contains(t, seen["ENTRYPOINT"], "runner")
	require.Contains(t, seen["CMD"], `"serve"`)
	require.Contains(t, seen["ENV"], "RUNNER_HTTP_ADDR=0.0.0.0:8080")

	_, err = parseDockerfile(strings.NewReader("FROM x\nFROBNICATE y\n"))
	require.Error(t, err)
}
