// Package pgtest starts private PostgreSQL clusters for tests: each in a
// temporary directory of its own, on a free port of 127.0.0.1, run by this
// machine's server binaries (initdb, pg_ctl, postgres, pg_basebackup), so
// that a test may stop, kill, restart or fail over its database without
// touching the server the other tests share. A cluster is stopped and its
// directory removed when the test ends, pass or fail.
//
// The binaries are those of STINT_TEST_PGBIN (a directory) if set, else
// of the newest /usr/lib/postgresql/*/bin, else of PATH. initdb refuses
// to run as root: as root, every binary runs as the user postgres (its
// uid and gid set on the child process), who owns the cluster's directory.
// Without the binaries, or as root without that user, the test is skipped
// with a message that says what is missing.
//
// Clusters trade durability for speed (fsync off, no full-page writes):
// a test may stop one with -m immediate, which is a crash as far as the
// server knows, and it recovers from its WAL on the next start; what it
// cannot survive is the machine losing power, which no test does.
//
// Tests that share the one server of STINT_TEST_POSTGRES instead each
// take a schema of their own there (schema.go: Schema, SearchPathURL).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is one private PostgreSQL cluster (a data directory and the
// server running on it). Its methods fail the test on error.
type Cluster struct {
	t    testing.TB
	bin  string              // the directory of the server binaries
	cred *syscall.Credential // who runs them; nil: this process's user
	dir  string              // the cluster's directory: data/ and server.log
	// Port is the TCP port of 127.0.0.1 the server listens on.
	Port int
}

// Start initializes a cluster with the default settings (the database
// postgres, the superuser postgres, trust authentication on 127.0.0.1)
// and starts it. settings are more lines for postgresql.conf
// ("max_connections = 50").
func Start(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	c := Init(t, settings...)
	c.Start()
	return c
}

// Init is Start without the start: an initialized cluster that is down,
// for a test that starts a client first.
func Init(t testing.TB, settings ...string) *Cluster {
	t.Helper()
	c := newCluster(t)
	c.run("initdb", "-D", c.data(), "-U", "postgres", "--auth=trust", "-N", "-E", "UTF8", "--locale=C")
	c.configure(settings...)
	return c
}

// newCluster finds the binaries and who runs them, makes the cluster's
// directory, picks its port, and registers its removal.
func newCluster(t testing.TB) *Cluster {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		t.Skipf("pgtest: no PostgreSQL server binaries (%v): install the server package "+
			"(Debian: postgresql) or set STINT_TEST_PGBIN to the directory holding initdb, pg_ctl and postgres", err)
	}
	c := &Cluster{t: t, bin: bin}
	dir, err := os.MkdirTemp("", "stint-pgtest-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	c.dir = dir
	t.Cleanup(c.remove)
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("pgtest: running as root, and initdb refuses to: no user postgres to run the cluster as (%v)", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatalf("pgtest: give the cluster's directory to postgres: %v", err)
		}
	}
	c.Port = freePort(t)
	return c
}

// binDir is the directory of the server binaries.
func binDir() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	if d := os.Getenv("STINT_TEST_PGBIN"); d != "" {
		if !has(d) {
			return "", fmt.Errorf("STINT_TEST_PGBIN=%s lacks initdb, pg_ctl or postgres", d)
		}
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// The newest version first: 9.6 < 10 < 15.
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dirs[i])), 64)
		vj, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dirs[j])), 64)
		return vi > vj
	})
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil && has(filepath.Dir(p)) {
		return filepath.Dir(p), nil
	}
	return "", errors.New("none in /usr/lib/postgresql/*/bin nor on PATH")
}

// freePort is a TCP port of 127.0.0.1 free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: find a free port: %v", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func (c *Cluster) data() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) logFile() string {
	return filepath.Join(c.dir, "server.log")
}

// configure appends the test settings and settings to postgresql.conf.
func (c *Cluster) configure(settings ...string) {
	c.t.Helper()
	c.appendConf("postgresql.conf", append(c.baseSettings(), settings...))
}

// baseSettings are the settings of every cluster.
func (c *Cluster) baseSettings() []string {
	return []string{
		"port = " + strconv.Itoa(c.Port),
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = ''",
		"fsync = off",
		"full_page_writes = off",
		"shared_buffers = 32MB",
		"max_connections = 100",
		"max_wal_senders = 4",
		"wal_level = replica",
		"logging_collector = off",
	}
}

// appendConf appends lines to the configuration file name of the data
// directory (the last setting of a name wins).
func (c *Cluster) appendConf(name string, lines []string) {
	c.t.Helper()
	f, err := os.OpenFile(filepath.Join(c.data(), name), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		c.t.Fatalf("pgtest: %v", err)
	}
	_, err = f.WriteString("\n# pgtest\n" + strings.Join(lines, "\n") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		c.t.Fatalf("pgtest: write %s: %v", name, err)
	}
}

// command is the server binary name with args, run as the cluster's user
// in its directory.
func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "HOME="+c.dir, "PGTZ=UTC", "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

// run runs the server binary name, failing the test (with its output
// and the server's log) if it fails.
func (c *Cluster) run(name string, args ...string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := c.command(ctx, name, args...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("pgtest: %s %s: %v\n%s\nserver log:\n%s", name, strings.Join(args, " "), err, out, c.Log())
	}
}

// Log is the server's log so far (its last 8 KiB), for a failure message.
func (c *Cluster) Log() string {
	b, err := os.ReadFile(c.logFile())
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// Start starts the server and waits until it accepts connections. When
// another process took its port meanwhile (the port was free when the
// cluster was made), it moves to another free port, a few times at most.
func (c *Cluster) Start() {
	c.t.Helper()
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := c.command(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", c.data(), "-l", c.logFile()).CombinedOutput()
		cancel()
		if err == nil {
			return
		}
		if try < 3 && strings.Contains(c.Log(), "Address already in use") {
			c.Port = freePort(c.t)
			c.appendConf("postgresql.auto.conf", []string{"port = " + strconv.Itoa(c.Port)})
			continue
		}
		c.t.Fatalf("pgtest: pg_ctl start: %v\n%s\nserver log:\n%s", err, out, c.Log())
	}
}

// Stop stops the server with pg_ctl's mode: "immediate" (every backend
// killed at once, no checkpoint: a crash, recovered from the WAL at the
// next start), "fast" (transactions rolled back, clients disconnected) or
// "smart".
func (c *Cluster) Stop(mode string) {
	c.t.Helper()
	c.run("pg_ctl", "stop", "-w", "-t", "60", "-m", mode, "-D", c.data())
}

// Promote makes a standby (Replica) a primary and waits until it is one.
func (c *Cluster) Promote() {
	c.t.Helper()
	c.run("pg_ctl", "promote", "-w", "-t", "60", "-D", c.data())
}

// DSN is the URL of database db on the cluster, as the superuser.
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// Addr is the cluster's host:port.
func (c *Cluster) Addr() string { return "127.0.0.1:" + strconv.Itoa(c.Port) }

// Exec runs sql on database postgres of the cluster.
func (c *Cluster) Exec(sql string, args ...any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		c.t.Fatalf("pgtest: connect to %s: %v", c.Addr(), err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		c.t.Fatalf("pgtest: %s on %s: %v", sql, c.Addr(), err)
	}
}

// Replica makes a streaming replica of c, a running primary: a base
// backup (pg_basebackup -R, so it follows c) in a cluster of its own,
// started as a hot standby. With sync, c then waits for the replica to
// flush every commit before acknowledging it (synchronous_standby_names),
// so that what a client saw committed survives a failover to it; Replica
// returns once the replica streams (and, with sync, is c's synchronous
// standby).
func (c *Cluster) Replica(sync bool) *Cluster {
	c.t.Helper()
	r := newCluster(c.t)
	r.bin, r.cred = c.bin, c.cred
	r.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres",
		"-D", r.data(), "-R", "-X", "stream", "-c", "fast", "--no-sync")
	// The copied configuration is c's, port and all; postgresql.auto.conf
	// (read last, where -R wrote primary_conninfo) gets the replica's:
	// the last setting of a name wins.
	r.appendConf("postgresql.auto.conf", append(r.baseSettings(), "hot_standby = on",
		"primary_conninfo = 'host=127.0.0.1 port="+strconv.Itoa(c.Port)+" user=postgres application_name=pgtest_replica'"))
	r.Start()
	state := "async"
	if sync {
		c.Exec(`ALTER SYSTEM SET synchronous_standby_names = 'pgtest_replica'`)
		c.Exec(`SELECT pg_reload_conf()`)
		state = "sync"
	}
	c.waitFor(fmt.Sprintf("the replica on %s to stream (%s)", r.Addr(), state),
		`SELECT count(*) > 0 FROM pg_stat_replication WHERE application_name = 'pgtest_replica'
			AND state = 'streaming' AND sync_state = $1`, state)
	return r
}

// waitFor waits until the query (one boolean) holds on database postgres.
func (c *Cluster) waitFor(what, query string, args ...any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		c.t.Fatalf("pgtest: connect to %s: %v", c.Addr(), err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	every := time.Millisecond
	for {
		var ok bool
		if err := conn.QueryRow(ctx, query, args...).Scan(&ok); err != nil {
			c.t.Fatalf("pgtest: waiting for %s: %v\nserver log:\n%s", what, err, c.Log())
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("pgtest: timed out waiting for %s\nserver log:\n%s", what, c.Log())
		case <-time.After(every):
		}
		every = min(2*every, 25*time.Millisecond)
	}
}

// remove stops the server (immediate: nothing in it is kept) if it runs
// and removes the cluster's directory.
func (c *Cluster) remove() {
	if _, err := os.Stat(filepath.Join(c.data(), "postmaster.pid")); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := c.command(ctx, "pg_ctl", "stop", "-w", "-m", "immediate", "-D", c.data()).CombinedOutput(); err != nil {
			c.t.Errorf("pgtest: stop the cluster on %s: %v\n%s", c.Addr(), err, out)
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		c.t.Errorf("pgtest: remove the cluster's directory: %v", err)
	}
}
