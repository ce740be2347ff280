package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTick is the unit of /proc/PID/stat's utime and stime (USER_HZ, 100
// on Linux).
const clockTick = 10 * time.Millisecond

// procCPU returns the user+system CPU time of process pid so far (0 when it
// cannot be read: another user's process, or gone).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command (which may hold spaces), from field 3 on.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * clockTick
}

// machineCPU returns the CPU time all of this machine's CPUs spent busy
// (user, nice, system, irq and softirq of /proc/stat's first line; not
// idle, iowait or steal, and guest time is already in user) and the
// wall time now, so that two samples give the whole machine's load over
// an interval: the processes a measurement counts, and everything else
// (PostgreSQL's own processes, the harness, the kernel).
func machineCPU() (busy time.Duration, at time.Time) {
	at = time.Now()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, at
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 7 { // steal: another guest's time; guest and guest_nice are in user and nice
			break
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += time.Duration(n) * clockTick
	}
	return busy, at
}

// machineLoad samples machineCPU every 10 ms from its start until stop,
// so that the machine's load can be read afterwards over the interval the
// jobs ran, which is known only once they have ended.
type machineLoad struct {
	once    sync.Once
	done    chan struct{}
	stopped chan struct{}
	busy    []time.Duration
	at      []time.Time
}

// watchMachine starts sampling the machine's load.
func watchMachine() *machineLoad {
	m := &machineLoad{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(m.stopped)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			b, at := machineCPU()
			m.busy, m.at = append(m.busy, b), append(m.at, at)
			select {
			case <-m.done:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// stop ends the sampling; call it before over. Calling it again does
// nothing.
func (m *machineLoad) stop() {
	m.once.Do(func() { close(m.done) })
	<-m.stopped
}

// over returns the machine's busy CPU time between the samples nearest
// from and to, and the wall time between them.
func (m *machineLoad) over(from, to time.Time) (busy, wall time.Duration) {
	i := nearest(m.at, from)
	j := nearest(m.at, to)
	return m.busy[j] - m.busy[i], m.at[j].Sub(m.at[i])
}

func nearest(ts []time.Time, t time.Time) int {
	best := 0
	for i := range ts {
		if ts[i].Sub(t).Abs() < ts[best].Sub(t).Abs() {
			best = i
		}
	}
	return best
}

// restOfMachine fills in s.rest and s.busy from the machine's load over
// the interval from first to last, in which n jobs ran with the counted
// CPU per job in s (counted over a slightly longer interval, so rest is
// if anything too low).
func (s *cpuSample) restOfMachine(m *machineLoad, first, last time.Time, n int) {
	busy, wall := m.over(first, last)
	if wall <= 0 {
		return
	}
	s.busy = busy.Seconds() / wall.Seconds()
	// The counted CPU of the jobs in the interval, at the measured rate.
	jobs := float64(n) * wall.Seconds() / last.Sub(first).Seconds()
	s.rest = time.Duration(busy.Seconds()/jobs*1e9) - s.client - s.server
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU sums the CPU time of the PostgreSQL backends serving
// connections named app (application_name); the server runs on this
// machine. The backends of a pool live as long as its connections.
func backendCPU(ctx context.Context, pool *pgxpool.Pool, app string) (time.Duration, int, error) {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	var sum time.Duration
	n := 0
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return 0, 0, err
		}
		sum += procCPU(pid)
		n++
	}
	return sum, n, rows.Err()
}

// cpuSample is the CPU time a measurement spent, per job, and its
// steady-state rate.
type cpuSample struct {
	client, server time.Duration // per job
	// mid is the jobs/s between the 10th and the 90th percentile of the
	// jobs' end times: the rate once the workers are going, without the
	// start (first claims) and the end (the last jobs spread over fewer
	// workers) of either system.
	mid float64
	// rest is the CPU time per job the rest of the machine spent over
	// the same interval (PostgreSQL's own processes, the harness, the
	// kernel), and busy the average number of busy CPUs then: a busy
	// near the CPU count means the machine, not a wait, bounded the run.
	rest time.Duration
	busy float64
}

// ends reads the jobs' end times (q returns them in order) and returns the
// last and the rate over the middle 80% of them.
func ends(ctx context.Context, pool *pgxpool.Pool, q string) (last time.Time, mid float64, err error) {
	rows, err := pool.Query(ctx, q)
	if err != nil {
		return last, 0, err
	}
	ts, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return last, 0, err
	}
	if len(ts) < 10 {
		return last, 0, fmt.Errorf("only %d jobs ended", len(ts))
	}
	lo, hi := len(ts)/10, len(ts)*9/10
	if os.Getenv("QUEUES_DECILES") != "" {
		var d []string
		for k := 0; k < 10; k++ {
			a, b := len(ts)*k/10, len(ts)*(k+1)/10-1
			d = append(d, fmt.Sprintf("%.0f", float64(b-a)/ts[b].Sub(ts[a]).Seconds()))
		}
		fmt.Fprintf(os.Stderr, "jobs/s by tenth of the jobs' ends: %s\n", strings.Join(d, " "))
	}
	return ts[len(ts)-1], float64(hi-lo) / ts[hi].Sub(ts[lo]).Seconds(), nil
}
