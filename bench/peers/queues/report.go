package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report renders the run as Markdown.
func report(o options, r results) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "Command: `%s` (from bench/peers), %s to %s UTC, %d CPUs (%s), host %s, load average at the end %s.\n\n",
		o.commandLine, r.started.UTC().Format("2006-01-02 15:04"), r.ended.UTC().Format("15:04"), runtime.NumCPU(),
		cpuModel(), host, loadAvg())
	fmt.Fprintf(&b, "Throughput: %d trivial jobs queued before each measurement (River: InsertMany; Stint: one INSERT), %d rounds interleaved; River MaxWorkers %d, each `runner serve` --workers %d.\n\n",
		o.n, o.rounds, o.riverWorkers, o.stintWorkers)
	if o.warm > 0 {
		fmt.Fprintf(&b, "Before each measurement, each system worked %d jobs of the same kind, unmeasured (`-warm`), as a service that has been running does: Stint's runners and River's client started, then the measured jobs queued at once (Stint: one INSERT; River: InsertMany in one transaction), and only those counted.\n\n", o.warm)
	} else {
		b.WriteString("Each system starts cold (`-warm 0`): a fresh `runner serve`, a fresh River client, the jobs queued before it starts.\n\n")
	}
	if o.stintTenants > 0 {
		fmt.Fprintf(&b, "Stint's jobs are spread over %d tenants (`--stint-tenants`), so its claims are fair (tenants in turn); River's have no tenants.\n\n", o.stintTenants)
	}
	if o.fairRow > 0 {
		fmt.Fprintf(&b, "\"Fair claims over %d tenants\" (`-fair-row`): one runner whose jobs are spread over %d tenants, so that every claim takes the tenants in turn (what a runner shared by several tenants pays for fairness); the other Stint rows' jobs have no tenant (the ordered claim). River's have no tenants.\n\n", o.fairRow, o.fairRow)
	}
	b.WriteString("CPU per job: user+system time of the worker processes (River: this process; Stint: the `runner serve` processes) and of the PostgreSQL backends serving their connections, from the start of the work to the last completion, over the jobs (medians); the ceiling is what the machine's CPUs could do at that cost with nothing else running. \"Rest of machine\" is the CPU per job of everything else over the jobs' interval (PostgreSQL's own processes, the harness, the kernel; from /proc/stat), and \"CPUs busy\" the machine's average load then: near the CPU count, the machine's CPUs bounded the run, not a wait.\n\n")
	b.WriteString("Both systems are timed from their first job's start to their last job's end as the worker recorded it (River: first `Work`, last `finalized_at`; Stint: the attempts' start and end), the last commit not waited for on either side. \"Middle 80%\" is the rate between the 10th and the 90th percentile of the jobs' end times: the steady state, without either system's start and end.\n\n")
	b.WriteString("| system | jobs/s, median | each round | vs best River | jobs/s, middle 80% | CPU/job, workers | CPU/job, PostgreSQL backends | CPU-bound ceiling (jobs/s) | CPU/job, rest of machine | CPUs busy |\n| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	best := 0.0
	for _, name := range r.names {
		if strings.HasPrefix(name, "River") && len(r.rate[name]) > 0 {
			best = max(best, median(r.rate[name]))
		}
	}
	for _, name := range r.names {
		xs := r.rate[name]
		if len(xs) == 0 {
			continue
		}
		var each []string
		var cl, sv, mids, rest, busy []float64
		for i, x := range xs {
			each = append(each, fmt.Sprintf("%.0f", x))
			cl = append(cl, float64(r.cpu[name][i].client))
			sv = append(sv, float64(r.cpu[name][i].server))
			mids = append(mids, r.cpu[name][i].mid)
			rest = append(rest, float64(r.cpu[name][i].rest))
			busy = append(busy, r.cpu[name][i].busy)
		}
		m := median(xs)
		c, v := median(cl), median(sv)
		ceiling := float64(runtime.NumCPU()) / ((c + v) / 1e9)
		vs := "–" // River not measured (-only stint)
		if best > 0 {
			vs = fmt.Sprintf("%.2fx", m/best)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %s | %s | %.0f | %.0f µs | %.0f µs | %.0f | %.0f µs | %.2f |\n", name, m, strings.Join(each, ", "), vs, median(mids), c/1e3, v/1e3, ceiling, median(rest)/1e3, median(busy))
	}
	b.WriteString("\n")
	if len(r.lat["River"]) > 0 {
		fmt.Fprintf(&b, "Enqueue-to-start, one job at a time on an idle worker (%d samples each):\n\n", len(r.lat["River"]))
		b.WriteString("| system | p50 | p99 | max |\n| --- | ---: | ---: | ---: |\n")
		for _, name := range []string{"River", "Stint"} {
			s := slices.Clone(r.lat[name])
			slices.Sort(s)
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, ms(quantile(s, 0.5)), ms(quantile(s, 0.99)), ms(s[len(s)-1]))
		}
		b.WriteString("\n")
	}
	if len(r.noisy["River alone"]) > 0 {
		fmt.Fprintf(&b, "A quiet tenant beside a noisy one: enqueue-to-start of the quiet tenant's jobs, one at a time (%d samples each), alone and each enqueued right after %d jobs of a noisy tenant (Stint: tenants `quiet` and `noisy`, claimed in turn; River has no tenants: its quiet job waits behind them):\n\n",
			len(r.noisy["River alone"]), o.noisy)
		b.WriteString("| system | alone p50 | alone p99 | beside p50 | beside p99 | p99 beside / alone |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
		for _, name := range []string{"River", "Stint"} {
			a, n := slices.Clone(r.noisy[name+" alone"]), slices.Clone(r.noisy[name+" beside"])
			slices.Sort(a)
			slices.Sort(n)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.2fx |\n", name, ms(quantile(a, 0.5)), ms(quantile(a, 0.99)),
				ms(quantile(n, 0.5)), ms(quantile(n, 0.99)), float64(quantile(n, 0.99))/float64(quantile(a, 0.99)))
		}
		b.WriteString("\n")
	}
	if len(r.kill["River"]) > 0 {
		fmt.Fprintf(&b, "SIGKILL of a worker process to its job running elsewhere (%d kills each; Stint --lease %s, River JobTimeout = RescueStuckJobsAfter = %s, retry at once):\n\n",
			len(r.kill["River"]), o.lease, o.lease)
		b.WriteString("| system | median | each |\n| --- | ---: | --- |\n")
		for _, name := range []string{"River", "Stint"} {
			var each []string
			var fs []float64
			for _, d := range r.kill[name] {
				each = append(each, ms(d))
				fs = append(fs, float64(d))
			}
			fmt.Fprintf(&b, "| %s | %s | %s |\n", name, ms(time.Duration(median(fs))), strings.Join(each, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
