package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/internal/testwasm/wat"
)

// browserBound is how long the browser test waits for a child process (the
// build, the runner, a page) before it calls it hung.
const browserBound = 3 * time.Minute

// chromiumPath is Debian's headless-capable Chromium (`.ci/run` installs
// it), or "" when it is absent.
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// browser runs headless Chromium, one process per page, each with a fresh
// profile (so no cookie survives from one page to the next).
type browser struct {
	t    *testing.T
	path string
	// shots is where a failing test's screenshots go.
	shots string
}

func (b browser) args(extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + b.t.TempDir()}, extra...)
}

// dom loads url and returns the DOM as Chromium rendered it, after the
// redirects (the ?token= sign-in) and the page's own work.
func (b browser) dom(url string) string {
	b.t.Helper()
	d, err := b.load(url)
	require.NoError(b.t, err)
	return d
}

func (b browser) load(url string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), browserBound)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, b.path, b.args("--dump-dom", url)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("chromium --dump-dom %s: %w: %s", url, err, errb.String())
	}
	return out.String(), nil
}

// doms loads every url at once, each in its own Chromium.
func (b browser) doms(urls ...string) map[string]string {
	b.t.Helper()
	type page struct {
		url, dom string
		err      error
	}
	ch := make(chan page, len(urls))
	for _, u := range urls {
		go func() {
			d, err := b.load(u)
			ch <- page{u, d, err}
		}()
	}
	out := map[string]string{}
	for range urls {
		p := <-ch
		require.NoError(b.t, p.err)
		out[p.url] = p.dom
	}
	return out
}

// screenshot saves what a person would see at url, for a failing test.
func (b browser) screenshot(name, url string) {
	b.t.Helper()
	path := filepath.Join(b.shots, name+".png")
	ctx, cancel := context.WithTimeout(context.Background(), browserBound)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.path, b.args("--screenshot="+path, "--window-size=1280,1600", "--hide-scrollbars", url)...).CombinedOutput()
	if err != nil {
		b.t.Logf("screenshot of %s failed: %v: %s", url, err, out)
		return
	}
	b.t.Logf("screenshot of %s: %s", url, path)
}

var tagRE = regexp.MustCompile(`(?s)<[^>]*>`)

// visible is the text of a dumped DOM, as a person reads it: tags dropped,
// entities decoded, white space collapsed.
func visible(dom string) string {
	if i := strings.Index(dom, "<body"); i >= 0 {
		dom = dom[i:]
	}
	return strings.Join(strings.Fields(html.UnescapeString(tagRE.ReplaceAllString(dom, " "))), " ")
}

// runnerChild is `runner serve` as a child process.
type runnerChild struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	news  chan struct{}
	done  chan struct{}
}

func (p *runnerChild) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitLine returns the first log line containing sub.
func (p *runnerChild) waitLine(t *testing.T, sub string) string {
	t.Helper()
	deadline := time.After(browserBound)
	for {
		p.mu.Lock()
		news := p.news
		for _, l := range p.lines {
			if strings.Contains(l, sub) {
				p.mu.Unlock()
				return l
			}
		}
		p.mu.Unlock()
		select {
		case <-news:
		case <-p.done:
			t.Fatalf("runner exited before logging %q:\n%s", sub, p.log())
		case <-deadline:
			t.Fatalf("runner did not log %q:\n%s", sub, p.log())
		}
	}
}

// buildRunner builds the real runner binary into dir.
func buildRunner(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "runner")
	ctx, cancel := context.WithTimeout(context.Background(), browserBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/stint-run/stint/cmd/runner")
	cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/runner: %s", out)
	return bin
}

func startServe(t *testing.T, bin string, env ...string) *runnerChild {
	t.Helper()
	p := &runnerChild{cmd: exec.Command(bin, "serve"), news: make(chan struct{}), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "RUNNER_LOG_FORMAT=json", "RUNNER_LOG_LEVEL=info"), env...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		testutil.AppendLines(stderr, &p.mu, &p.lines, &p.news)
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("runner log:\n%s", p.log())
		}
	})
	return p
}

// api is a bearer-token client of the child's API.
type api struct {
	t     *testing.T
	c     *http.Client
	base  string
	token string
}

func (a api) call(method, path, ctype string, body []byte, out any) int {
	a.t.Helper()
	code, b := a.do(method, path, ctype, body)
	if out != nil {
		require.NoError(a.t, json.Unmarshal(b, out), "%s %s: %d %s", method, path, code, b)
	}
	return code
}

// do makes one request with the token and returns its status and body.
func (a api) do(method, path, ctype string, body []byte) (int, []byte) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, bytes.NewReader(body))
	require.NoError(a.t, err)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.c.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return resp.StatusCode, b
}

// awaitMetric polls /metrics until it holds line: for what the runner
// records from the pool's events, after the store has the state a task's
// await sees.
func (a api) awaitMetric(line string) {
	a.t.Helper()
	testutil.WaitFor(a.t, "/metrics to hold "+line, func() bool {
		_, b := a.do(http.MethodGet, "/metrics", "", nil)
		return bytes.Contains(b, []byte(line))
	})
}

type childTask struct {
	ID            int64  `json:"id"`
	State         string `json:"state"`
	ProgressDone  int64  `json:"progress_done"`
	ProgressTotal int64  `json:"progress_total"`
}

func (a api) module(name string) string {
	a.t.Helper()
	var m struct {
		SHA256 string `json:"sha256"`
	}
	require.Equal(a.t, http.StatusCreated, a.call(http.MethodPost, "/v1/modules", "application/wasm", wat.MustLoad(name), &m))
	return m.SHA256
}

func (a api) submit(spec map[string]any) childTask {
	a.t.Helper()
	b, err := json.Marshal(spec)
	require.NoError(a.t, err)
	var tk childTask
	require.Equal(a.t, http.StatusCreated, a.call(http.MethodPost, "/v1/tasks", "application/json", b, &tk))
	return tk
}

// await polls task id until ok holds for it: the state the test is about,
// not a guessed duration.
func (a api) await(id int64, what string, ok func(childTask) bool) {
	a.t.Helper()
	var tk childTask
	defer func() {
		if a.t.Failed() {
			a.t.Logf("task %d as last read: %+v", id, tk)
		}
	}()
	testutil.WaitFor(a.t, fmt.Sprintf("task %d to be %s", id, what), func() bool {
		a.call(http.MethodGet, fmt.Sprintf("/v1/tasks/%d", id), "", nil, &tk)
		return ok(tk)
	})
}

// artifactDir is where screenshots go: the test's artifact directory under
// `go test -artifacts -outputdir DIR`, else a directory under the system's
// temporary directory that is kept after the test.
func artifactDir(t *testing.T) string {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir()
	}
	dir, err := os.MkdirTemp("", "stint-dashboard-shots-")
	require.NoError(t, err)
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	return dir
}

// serveWithToken builds the runner and starts `runner serve` with a data
// directory of its own, an address of its choosing, token, two workers
// and env; it waits until the runner is ready and returns it with a
// client of its API that sends the token (whose idle connections are
// closed when t ends).
func serveWithToken(t *testing.T, token string, env ...string) (*runnerChild, api) {
	t.Helper()
	dir := t.TempDir()
	bin := buildRunner(t, dir)
	p := startServe(t, bin, append([]string{"RUNNER_DATA_DIR=" + filepath.Join(dir, "data"), "RUNNER_HTTP_ADDR=127.0.0.1:0",
		"RUNNER_HTTP_TOKEN=" + token, "RUNNER_WORKERS=2"}, env...)...)
	var listening struct {
		Addr string `json:"addr"`
	}
	require.NoError(t, json.Unmarshal([]byte(p.waitLine(t, "HTTP API listening")), &listening))
	p.waitLine(t, "runner ready")
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return p, api{t: t, c: &http.Client{Transport: tr, Timeout: browserBound}, base: "http://" + listening.Addr, token: token}
}

// browserChromium returns Chromium's path for a browser test, and skips
// the test when Chromium is not installed or under -short.
func browserChromium(t *testing.T) string {
	t.Helper()
	chromium := chromiumPath()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install chromium; .ci/run installs it): the dashboard's browser test cannot run")
	}
	if testing.Short() {
		t.Skip("-short: the browser test builds the runner and starts Chromium")
	}
	return chromium
}

// TestDashboardInBrowser loads the dashboard of a real `runner serve` (the
// binary as a child process, with a token) in headless Chromium, with a
// task in every state, and checks what a person sees; then it stops the
// runner with SIGTERM and sees it draining. A failing check saves a
// screenshot of the page and logs its path.
func TestDashboardInBrowser(t *testing.T) {
	chromium := browserChromium(t)
	t.Parallel()
	const token = "browser-test-token-0123456789"
	p, a := serveWithToken(t, token,
		// A long drain, so that the page can be read while the runner drains;
		// a second SIGTERM ends it. The attempt timeout is longer than the
		// test can take on a loaded machine: at the default (1m) the running
		// task was asked to stop, ended, and the drain finished before the
		// test's second SIGTERM.
		"RUNNER_SHUTDOWN_DRAIN=120s", "RUNNER_SHUTDOWN_BUDGET=150s", "RUNNER_LIMITS_TIMEOUT=30m")
	base := a.base

	noop, fail, progress := a.module("noop"), a.module("seams_stderr_fail"), a.module("progress_wait")
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	ok := a.submit(map[string]any{"module": noop, "labels": map[string]string{"job": "fine"}})
	dead := a.submit(map[string]any{"module": fail, "max_attempts": 1, "args": []string{hostile},
		"labels": map[string]string{"job": hostile}})
	running := a.submit(map[string]any{"module": progress, "queue": "video", "labels": map[string]string{"job": "encode"}})
	queued := a.submit(map[string]any{"module": noop, "run_at": later})
	cancelled := a.submit(map[string]any{"module": noop, "run_at": later})
	require.Equal(t, http.StatusOK, a.call(http.MethodPost, fmt.Sprintf("/v1/tasks/%d/cancel", cancelled.ID), "", nil, nil))
	a.await(ok.ID, "succeeded", func(tk childTask) bool { return tk.State == "succeeded" })
	a.await(dead.ID, "dead", func(tk childTask) bool { return tk.State == "dead" })
	a.await(running.ID, "running with progress 1/2", func(tk childTask) bool {
		return tk.State == "running" && tk.ProgressDone == 1 && tk.ProgressTotal == 2
	})
	a.await(queued.ID, "queued", func(tk childTask) bool { return tk.State == "queued" })
	a.awaitMetric(`stint_attempts_ended_total{outcome="succeeded",queue="default"} 1`) // the queue's graph has it

	b := browser{t: t, path: chromium, shots: artifactDir(t)}
	check := func(name, url string, dom string, ok bool, msg string, args ...any) {
		t.Helper()
		if !ok {
			b.screenshot(name, url)
			t.Fatalf("%s: %s\nvisible text: %s", url, fmt.Sprintf(msg, args...), visible(dom))
		}
	}
	var loaded map[string]string // pages loaded ahead, at once
	sees := func(name, url string, texts ...string) string {
		t.Helper()
		dom, ok := loaded[url]
		if !ok {
			dom = b.dom(url)
		}
		text := visible(dom)
		check(name, url, dom, !strings.Contains(strings.ToLower(dom), "<script"), "the page holds a script element: a value was not escaped")
		for _, want := range texts {
			check(name, url, dom, strings.Contains(text, want), "a person does not see %q", want)
		}
		return dom
	}

	overview := base + "/?token=" + token
	taskURL := fmt.Sprintf("%s/tasks/%d?token=%s", base, dead.ID, token)
	runningURL := fmt.Sprintf("%s/tasks/%d?token=%s", base, running.ID, token)
	listURL := base + "/tasks?state=cancelled&token=" + token
	// A schedule, paused so that it adds no task to the counts below.
	require.Equal(t, http.StatusCreated, a.call(http.MethodPost, "/v1/schedules", "application/json",
		[]byte(`{"name":"nightly","cron":"0 3 * * *","paused":true,"spec":{"module":"`+noop+`","queue":"edge"}}`), nil))
	runnersURL, schedulesURL := base+"/runners?token="+token, base+"/schedules?token="+token
	require.Equal(t, http.StatusOK, a.call(http.MethodPost, "/v1/tenants", "application/json",
		[]byte(`{"tenant":"acme","weight":3,"work_quota":5000,"work_period":"1h"}`), nil))
	tenantsURL := base + "/tenants?token=" + token
	loaded = b.doms(base+"/", overview, taskURL, runningURL, listURL, runnersURL, schedulesURL, tenantsURL)

	// Without the token: the sign-in form, nothing of the queue.
	dom := sees("signin", base+"/", "Sign in", "Token")
	check("signin", base+"/", dom, !strings.Contains(visible(dom), "boom"), "the queue shows without the token")

	// With it once in the URL: the cookie, the redirect, the overview.
	dom = sees("overview", overview,
		"ready: claiming and running tasks",
		"Tasks by queue and state", "video",
		"1 / 2 (50%)", "encode",
		"boom: the last line", hostile,
		"Recent failures", "Running")
	for state, n := range map[string]string{"queued": "1", "running": "1", "succeeded": "1", "dead": "1", "cancelled": "1"} {
		check("overview", overview, dom, strings.Contains(dom, fmt.Sprintf(`id="total-%s"><a href="/tasks?state=%s">%s</a>`, state, state, n)),
			"the count of %s tasks is not %s", state, n)
	}
	check("overview", overview, dom, strings.Contains(dom, `id="total-all">5<`), "the total is not 5")
	check("overview", overview, dom, strings.Contains(dom, `<svg id="throughput"`), "no graph of the last hour")
	check("overview", overview, dom, strings.Contains(dom, `<td id="throughput-default"><svg class="small-graph"`), "no graph of the default queue's last hour")

	// One task's page: its attempts with their stderr, args as text.
	sees("task", taskURL, fmt.Sprintf("Task %d", dead.ID), "dead", "Attempt 1: failed, exit code 1", "boom: the last line", hostile)
	sees("running-task", runningURL, "running", "1 / 2 (50%)", "No attempt has ended yet")
	sees("list", listURL, "cancelled tasks", fmt.Sprintf("#%d", cancelled.ID), "Newest first, 1 shown.")
	// The runners of the store (this one, alive) and the schedules.
	sees("runners", runnersURL, "Runners", "alive", "Owner", "Last seen")
	sees("schedules", schedulesURL, "Schedules", "nightly", "cron 0 3 * * *", "paused", "edge", "Resume", "Remove")
	sees("tenants", tenantsURL, "Tenants", "acme", "0 of 5000 per 1h0m0s", "Change a tenant")

	// SIGTERM: readiness goes false at once; the page says the runner drains.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	testutil.WaitFor(t, "readiness to go false after SIGTERM", func() bool {
		resp, err := a.c.Get(base + "/readyz")
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	loaded = nil
	sees("draining", overview, "draining: no new claims", "Shutdown phase drain", "1 / 2 (50%)")
	// A second signal skips to the forced stop; the runner exits.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(browserBound):
		t.Fatal("the runner did not exit after a second SIGTERM")
	}
}
