//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint/internal/testutil"
	"github.com/stint-run/stint/tasks"
)

// TestServeWatchdogRestartsAFrozenRunner: runner serve under a supervisor
// that does what systemd does for deploy/systemd/stint-runner.service
// (Type=notify, NotifyAccess=main, WatchdogSec=, Restart=on-failure;
// notifySupervisor below: no systemd user instance runs in a container),
// with WatchdogSec=2s. The runner says READY=1, and while it runs a task
// (the sleep fixture) it pings WATCHDOG=1, each ping within WatchdogSec of
// the last. Then it freezes: the test build's stop-the-world that never
// ends (SIGUSR2 with STINT_TEST_WEDGE=stw, testhooks_on.go), or SIGSTOP.
// The pings stop, GET /healthz does not answer either (what a Kubernetes
// liveness probe would see), and WatchdogSec after the last ping the
// supervisor sends SIGABRT, which ends the first (Go's crash: exit status
// 2 and every goroutine's stack), then SIGKILL, which ends the second,
// and starts the runner again. The new process says READY=1, recovers the
// task the frozen one held (its attempt "lost", not counted), runs it
// again and pings; on SIGTERM (systemctl stop) it says STOPPING=1 and
// exits 0.
func TestServeWatchdogRestartsAFrozenRunner(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		freeze func(t *testing.T, p *proc)
		// ended: how the frozen runner ended; killed: by SIGKILL, after
		// SIGABRT did not end it.
		ended  string
		killed bool
	}{
		{"stop_the_world", func(t *testing.T, p *proc) {
			p.signal(t, syscall.SIGUSR2)
			p.waitLine(t, "wedging the runner on purpose")
		}, "exit status 2", false},
		{"sigstop", func(t *testing.T, p *proc) { p.signal(t, syscall.SIGSTOP) }, "signal: killed", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const watchdog = 2 * time.Second
			dir := dataDir(t)
			s := openTestStore(t, dir)
			id := queue(t, s, fixture(t, "sleep"), tasks.Spec{MaxAttempts: 3}) // sleeps an hour
			newCmd := func() *exec.Cmd {
				cmd := exec.Command(runnerBin, serveArgs(dir, "--http-addr", "127.0.0.1:0", "--workers", "1")...)
				cmd.Env = append(os.Environ(),
					"STINT_TEST_WEDGE=stw", "GODEBUG=asyncpreemptoff=1", // testhooks_on.go
					// The restarted runner's stop: the sleeping guest is forced at once.
					"RUNNER_SHUTDOWN_DRAIN=100ms", "RUNNER_SHUTDOWN_CANCEL=100ms")
				return cmd
			}
			// While the supervisor waits for a frozen runner's end, what a
			// liveness probe would get from it.
			beforeAbort := func(p *proc) string {
				addr, ok := apiAddr(p.stderr())
				if !ok {
					return "no API address in the runner's log"
				}
				tr := &http.Transport{DisableKeepAlives: true}
				defer tr.CloseIdleConnections()
				resp, err := (&http.Client{Transport: tr, Timeout: time.Second}).Get("http://" + addr + "/healthz")
				if err != nil {
					return "GET /healthz: no answer: " + err.Error()
				}
				_ = resp.Body.Close()
				return "GET /healthz answered " + resp.Status
			}
			sup := startSupervisor(t, supervision{watchdog: watchdog, abortWait: time.Second, beforeAbort: beforeAbort}, newCmd)
			task := func() tasks.Task {
				t.Helper()
				task, err := s.Get(context.Background(), id)
				require.NoError(t, err)
				return task
			}

			first := sup.waitEvent(t, "READY=1 from the first runner", func(e svEvent) bool { return e.kind == "READY=1" })
			p1 := sup.proc(first.pid)
			testutil.WaitFor(t, "the task to run", func() bool { return task().State == tasks.StateRunning })
			// Healthy: it keeps pinging (a missed WatchdogSec would show as
			// a "watchdog timeout" event first, and fail).
			after := first.seq
			for i := range 3 {
				after = sup.waitEvent(t, fmt.Sprintf("WATCHDOG=1 #%d from the healthy runner", i+1), func(e svEvent) bool {
					require.NotEqual(t, "watchdog timeout", e.kind, "the healthy runner missed its watchdog")
					return e.kind == "WATCHDOG=1" && e.seq > after
				}).seq
			}

			tc.freeze(t, p1)
			timeout := sup.waitEvent(t, "the frozen runner's watchdog timeout", func(e svEvent) bool {
				return e.kind == "watchdog timeout" && e.seq > after
			})
			require.Equal(t, first.pid, timeout.pid)
			require.Contains(t, timeout.detail, "GET /healthz: no answer", "a liveness probe would have restarted it too")
			exited := sup.waitEvent(t, "the frozen runner's end", func(e svEvent) bool { return e.kind == "exited" && e.pid == first.pid })
			require.Equal(t, tc.ended, exited.detail)
			require.Equal(t, tc.killed, sup.count("SIGKILL") == 1, "SIGKILL after SIGABRT")

			second := sup.waitEvent(t, "READY=1 from the restarted runner", func(e svEvent) bool {
				return e.kind == "READY=1" && e.seq > exited.seq
			})
			require.NotEqual(t, first.pid, second.pid)
			p2 := sup.proc(second.pid)
			p2.waitLine(t, "recovered tasks a previous runner left running", `"tasks":1`)
			testutil.WaitFor(t, "the task to run again on the restarted runner", func() bool {
				tk := task()
				return tk.State == tasks.StateRunning && tk.Attempt == 2
			})
			atts, err := s.Attempts(context.Background(), id)
			require.NoError(t, err)
			require.Len(t, atts, 1)
			require.Equal(t, "lost", atts[0].Outcome, "the frozen runner's attempt, recovered at the restart")
			require.False(t, atts[0].Counted)
			sup.waitEvent(t, "WATCHDOG=1 from the restarted runner", func(e svEvent) bool {
				return e.kind == "WATCHDOG=1" && e.pid == second.pid
			})

			code := sup.stop(t) // systemctl stop: SIGTERM
			sup.waitEvent(t, "STOPPING=1 from the restarted runner", func(e svEvent) bool {
				return e.kind == "STOPPING=1" && e.pid == second.pid
			})
			require.Equal(t, 0, code, p2.stderr())
			require.Equal(t, tasks.StateQueued, task().State, "the interrupted task is queued again")
			require.Equal(t, 2, sup.count("started"), "one restart")
		})
	}
}

// apiAddr is the address of the "HTTP API listening" line of a runner's
// log.
func apiAddr(log string) (string, bool) {
	for _, l := range strings.Split(log, "\n") {
		if !strings.Contains(l, "HTTP API listening") {
			continue
		}
		var line struct {
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(l), &line) == nil && line.Addr != "" {
			return line.Addr, true
		}
	}
	return "", false
}

// svEvent is one thing the supervisor saw or did: "started", a
// notification ("READY=1", "WATCHDOG=1", "STOPPING=1", "STATUS"), "ignored"
// (a notification from another process than the main one), "watchdog
// timeout", "SIGABRT", "SIGKILL", "SIGTERM", "exited", "failed".
type svEvent struct {
	seq    int
	kind   string
	pid    int
	detail string
	at     time.Time
}

// notification is one datagram on the notify socket and its sender.
type notification struct {
	pid  int
	text string
}

// supervision is what a notifySupervisor does, in a unit's terms.
type supervision struct {
	// watchdog is WatchdogSec; abortWait is TimeoutAbortSec, from
	// SIGABRT to SIGKILL.
	watchdog, abortWait time.Duration
	// beforeAbort, when set, runs on a watchdog timeout before SIGABRT;
	// what it returns is the event's detail.
	beforeAbort func(*proc) string
}

// restartDelay is the supervisor's RestartSec.
const restartDelay = 100 * time.Millisecond

// notifySupervisor runs a command as systemd runs a service of
// Type=notify with NotifyAccess=main, WatchdogSec and Restart=on-failure:
// it listens on a NOTIFY_SOCKET of its own (a unixgram socket with
// SO_PASSCRED, so each message carries its sender's pid, and it takes
// only the main process's), gives the command NOTIFY_SOCKET and
// WATCHDOG_USEC, arms the watchdog at READY=1, rearms it at each
// WATCHDOG=1, disarms it at STOPPING=1, and when it runs out sends
// SIGABRT (WatchdogSignal), then SIGKILL after abortWait
// (TimeoutAbortSec); a process that exits other than with status 0 is
// started again after restartDelay (RestartSec). stop is systemctl stop:
// SIGTERM, no restart.
type notifySupervisor struct {
	supervision
	newCmd func() *exec.Cmd

	sockPath string
	sock     *net.UnixConn
	msgs     chan notification
	stopReq  chan chan int
	quit     chan struct{}
	done     chan struct{}
	readDone chan struct{}

	mu     sync.Mutex
	events []svEvent
	procs  map[int]*proc
	update chan struct{} // closed and replaced on every event
}

// startSupervisor starts newCmd's command under a notifySupervisor; the
// test's cleanup ends both. It skips the test where a unixgram socket with
// SO_PASSCRED cannot be had.
func startSupervisor(t *testing.T, sv supervision, newCmd func() *exec.Cmd) *notifySupervisor {
	t.Helper()
	// A short path: a socket's name has at most 107 bytes.
	dir, err := os.MkdirTemp("", "sdnotify")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	s := &notifySupervisor{supervision: sv, newCmd: newCmd, sockPath: filepath.Join(dir, "notify"),
		msgs: make(chan notification, 64), stopReq: make(chan chan int), quit: make(chan struct{}),
		done: make(chan struct{}), readDone: make(chan struct{}), procs: map[int]*proc{}, update: make(chan struct{})}
	s.sock, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: s.sockPath, Net: "unixgram"})
	if err != nil {
		t.Skipf("no notify socket for a supervisor (systemd's sd_notify protocol) here: %v", err)
	}
	raw, err := s.sock.SyscallConn()
	require.NoError(t, err)
	var serr error
	require.NoError(t, raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_PASSCRED, 1)
	}))
	if serr != nil {
		_ = s.sock.Close()
		t.Skipf("the notify socket cannot tell senders apart (SO_PASSCRED): %v", serr)
	}
	go s.read()
	go s.run()
	t.Cleanup(func() {
		close(s.quit)
		<-s.done
		_ = s.sock.Close()
		<-s.readDone
		if t.Failed() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, e := range s.events {
				t.Logf("supervisor: %s #%d %s pid %d %s", e.at.Format("15:04:05.000"), e.seq, e.kind, e.pid, e.detail)
			}
			for pid, p := range s.procs {
				t.Logf("runner pid %d stderr:\n%s", pid, p.stderr())
			}
		}
	})
	return s
}

// read passes the socket's datagrams, with their senders' pids, to run.
func (s *notifySupervisor) read() {
	defer close(s.readDone)
	buf, oob := make([]byte, 4096), make([]byte, syscall.CmsgSpace(syscall.SizeofUcred))
	for {
		n, oobn, _, _, err := s.sock.ReadMsgUnix(buf, oob)
		if err != nil {
			return // closed
		}
		m := notification{pid: -1, text: string(buf[:n])}
		if cmsgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, c := range cmsgs {
				if cred, err := syscall.ParseUnixCredentials(&c); err == nil {
					m.pid = int(cred.Pid)
				}
			}
		}
		select {
		case s.msgs <- m:
		case <-s.done:
			return
		}
	}
}

func (s *notifySupervisor) record(kind string, pid int, detail string) svEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := svEvent{seq: len(s.events) + 1, kind: kind, pid: pid, detail: detail, at: time.Now()}
	s.events = append(s.events, e)
	close(s.update)
	s.update = make(chan struct{})
	return e
}

// run starts the command, watches it and starts it again, until quit or
// stop.
func (s *notifySupervisor) run() {
	defer close(s.done)
	for {
		cmd := s.newCmd()
		cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+s.sockPath,
			"WATCHDOG_USEC="+strconv.FormatInt(s.watchdog.Microseconds(), 10))
		p, err := launch(cmd, nil)
		if err != nil {
			s.record("failed", 0, err.Error())
			return
		}
		pid := p.cmd.Process.Pid
		s.mu.Lock()
		s.procs[pid] = p
		s.mu.Unlock()
		s.record("started", pid, "")
		stopped, reply := s.watch(p)
		state := p.cmd.ProcessState
		s.record("exited", pid, state.String())
		if reply != nil {
			reply <- state.ExitCode()
			return
		}
		if stopped || state.Success() { // quit, or Restart=on-failure: a clean exit stays down
			return
		}
		select {
		case <-time.After(restartDelay):
		case <-s.quit:
			return
		}
	}
}

// watch follows one process until it exits: its notifications, its
// watchdog, and stop requests. stopped: the test ended (quit); reply: a
// stop asked for the exit code.
func (s *notifySupervisor) watch(p *proc) (stopped bool, reply chan int) {
	pid := p.cmd.Process.Pid
	wd := time.NewTimer(time.Hour)
	wd.Stop()
	defer wd.Stop()
	var abortC <-chan time.Time
	ready, aborting := false, false
	for {
		select {
		case m := <-s.msgs:
			if m.pid != pid { // NotifyAccess=main
				s.record("ignored", m.pid, m.text)
				continue
			}
			for _, line := range strings.Split(strings.TrimSpace(m.text), "\n") {
				switch {
				case line == "READY=1":
					ready = true
					wd.Reset(s.watchdog)
					s.record(line, pid, "")
				case line == "WATCHDOG=1":
					if ready && !aborting {
						wd.Reset(s.watchdog)
					}
					s.record(line, pid, "")
				case line == "STOPPING=1":
					wd.Stop()
					s.record(line, pid, "")
				case strings.HasPrefix(line, "STATUS="):
					s.record("STATUS", pid, strings.TrimPrefix(line, "STATUS="))
				default:
					s.record("unknown", pid, line)
				}
			}
		case <-wd.C:
			aborting = true
			detail := ""
			if s.beforeAbort != nil {
				detail = s.beforeAbort(p)
			}
			s.record("watchdog timeout", pid, detail)
			_ = p.cmd.Process.Signal(syscall.SIGABRT)
			s.record("SIGABRT", pid, "")
			abortC = time.After(s.abortWait)
		case <-abortC:
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			s.record("SIGKILL", pid, "")
		case reply = <-s.stopReq:
			wd.Stop()
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			s.record("SIGTERM", pid, "")
		case <-p.done:
			return false, reply
		case <-s.quit:
			_ = p.cmd.Process.Kill()
			<-p.done
			return true, reply
		}
	}
}

// waitEvent waits for an event for which match holds (it sees every event,
// in order, once) and returns it.
func (s *notifySupervisor) waitEvent(t *testing.T, what string, match func(svEvent) bool) svEvent {
	t.Helper()
	e, got := waitItem(&s.mu, &s.events, &s.update, s.done, match)
	switch {
	case got == itemEnded:
		t.Fatalf("the supervisor ended before %s", what)
	case got == itemTimedOut:
		t.Fatalf("no %s within %s", what, bound)
	}
	return e
}

// count is the number of events of kind.
func (s *notifySupervisor) count(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.events {
		if e.kind == kind {
			n++
		}
	}
	return n
}

// proc is the process of pid.
func (s *notifySupervisor) proc(pid int) *proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.procs[pid]
}

// stop is systemctl stop: SIGTERM to the main process, which is not
// started again; it returns the exit code.
func (s *notifySupervisor) stop(t *testing.T) int {
	t.Helper()
	reply := make(chan int, 1)
	select {
	case s.stopReq <- reply:
	case <-s.done:
		t.Fatal("the supervisor had ended already")
	}
	select {
	case code := <-reply:
		return code
	case <-time.After(bound):
		t.Fatalf("the runner did not exit within %s of SIGTERM", bound)
	}
	return 0
}
