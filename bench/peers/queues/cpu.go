package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
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
	return ts[len(ts)-1], float64(hi-lo) / ts[hi].Sub(ts[lo]).Seconds(), nil
}
