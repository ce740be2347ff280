package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stint-run/stint/internal/testwasm/ckernels"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// defaultSnapshotEvery is the default of snapshots.every
// (cmd/runner/config.go; TestSnapshotEveryDefault checks that they agree):
// the interval the snapshots benchmark prices a snapshot at.
const defaultSnapshotEvery = 30 * time.Second

// snapshotGoal is issue 39's bound (item 8) on what snapshots may cost a
// long task, as a share of its run time.
const snapshotGoal = 0.02

// Snapshots measures what background snapshots cost (issue 39, item 8):
// a long task with a large memory (the chase C kernel linking 240 MiB
// into one random cycle, its memory incompressible, in a guest limited to
// 256 MiB) run with a snapshot every 200 ms and without, interleaved; the
// guest's pause per snapshot, the encoding and the SQLite write of one
// (whole, and as a delta after the one before it), and what they come to
// at the default snapshots.every; then the queue's throughput on short
// tasks with snapshots on and off, interleaved. Without clang-14 or
// wasi-libc the long task is left out, with a note saying why.
func Snapshots(ctx context.Context, o Options) (*Result, error) {
	res := &Result{Name: "snapshots"}
	tmp, err := os.MkdirTemp("", "stintbench-snapshots-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := snapshotsLong(ctx, o, res, tmp); err != nil {
		return nil, err
	}
	if err := snapshotsShort(ctx, o, res, tmp); err != nil {
		return nil, err
	}
	return res, nil
}

// snapshotsLong is the long task's part of Snapshots.
func snapshotsLong(ctx context.Context, o Options, res *Result, tmp string) error {
	mib, limitMiB, rounds := o.pick(240, 16), o.pick(256, 32), o.pick(6, 1) // even: each variant goes first as often
	every := o.pickDur(200*time.Millisecond, 10*time.Millisecond)
	title := fmt.Sprintf("A long task: chase linking %d MiB (memory limit %d MiB), a snapshot every %s against none, %d interleaved rounds",
		mib, limitMiB, every, rounds)
	wasm, err := ckernels.Build(o.CacheDir, "chase")
	if errors.Is(err, ckernels.ErrUnavailable) {
		o.logf("snapshots: no chase guest: %v", err)
		t := res.NewTable(title+": NOT MEASURED", "measure", "value")
		t.AddRow("the chase guest (internal/testwasm/ckernels)", "not built: "+err.Error())
		t.Notes = append(t.Notes, "Install clang-14, lld-14 and wasi-libc and run the block again: "+
			"without them neither the long task's snapshot cost nor issue 39's 2% goal is measured.")
		return nil
	}
	if err != nil {
		return err
	}
	rt, err := sandbox.New(ctx, sandbox.Config{Resumable: true, CacheDir: filepath.Join(o.CacheDir, "sandbox-resumable")})
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	mod, err := rt.Compile(ctx, wasm)
	if err != nil {
		return err
	}
	// A real SQLite store holding one claimed task: the fenced writes of
	// the snapshots, as the pool makes them.
	store, sha, err := openWithModule(ctx, filepath.Join(tmp, "long", "stint.db"), wasm)
	if err != nil {
		return err
	}
	defer store.Close()
	if _, _, err := store.Submit(ctx, tasks.Spec{Module: sha}); err != nil {
		return err
	}
	cl, err := store.Claim(ctx, tasks.ClaimRequest{Owner: "stintbench", Max: 1, Lease: 24 * time.Hour})
	if err != nil {
		return err
	}
	if len(cl) != 1 {
		return fmt.Errorf("snapshots: claimed %d tasks, want 1", len(cl))
	}
	lease := cl[0].Lease

	input := ckernels.ChaseInput(0, mib)
	lim := sandbox.Limits{MemoryBytes: int64(limitMiB) << 20, Timeout: 10 * time.Minute}
	plain := res.NewSeries("snapshots/long/run/none", "ns")
	snapped := res.NewSeries("snapshots/long/run/every", "ns")
	slowdown := res.NewSeries("snapshots/long/run/every-over-none", "ratio")
	count := res.NewSeries("snapshots/long/snapshots-per-run", "count")
	peak := res.NewSeries("snapshots/long/peak-memory", "bytes")
	pause := res.NewSeries("snapshots/long/pause", "ns")
	parts := map[string]*Series{}
	for _, k := range []string{"whole", "delta"} {
		for _, p := range []string{"encode", "write"} {
			parts[k+"/"+p] = res.NewSeries("snapshots/long/"+k+"/"+p, "ns")
			parts[k+"/"+p+"/cpu"] = res.NewSeries("snapshots/long/"+k+"/"+p+"/cpu", "ns")
		}
		parts[k+"/size"] = res.NewSeries("snapshots/long/"+k+"/size", "bytes")
	}
	for r := range rounds {
		var d [2]time.Duration
		var n int
		var last, prev *sandbox.Snapshot
		for _, v := range rotate([]int{0, 1}, r) {
			spec := sandbox.Spec{Input: input, Limits: lim}
			if v == 1 {
				spec.SnapshotEvery = every
				spec.OnSnapshot = func(s *sandbox.Snapshot) { n++; prev, last = last, s }
			}
			out, err := rt.Run(ctx, mod, spec)
			if err != nil {
				return err
			}
			if out.Kind != sandbox.KindSucceeded {
				return fmt.Errorf("snapshots: chase (%d MiB): %s", mib, out)
			}
			d[v] = out.Duration
			if v == 0 {
				peak.Values = append(peak.Values, float64(out.PeakMemoryBytes))
			}
		}
		if prev == nil {
			return fmt.Errorf("snapshots: chase (%d MiB) took %d snapshots in %s at one every %s; at least 2 are needed", mib, n, d[1], every)
		}
		plain.AddDuration(d[0])
		snapped.AddDuration(d[1])
		slowdown.Values = append(slowdown.Values, d[1].Seconds()/d[0].Seconds())
		count.Values = append(count.Values, float64(n))
		pause.AddDuration((d[1] - d[0]) / time.Duration(n))
		if err := snapshotWrites(ctx, store, lease, prev, last, parts); err != nil {
			return err
		}
		o.logf("snapshots: round %d: %s without snapshots, %s with %d (%s each)", r+1,
			d[0].Round(time.Millisecond), d[1].Round(time.Millisecond), n, ((d[1] - d[0]) / time.Duration(n)).Round(100*time.Microsecond))
	}

	t := res.NewTable(title, "measure", "median", "min", "max", "rounds")
	row := func(label string, s *Series, f func(float64) string) {
		t.AddRow(label, f(s.Median()), f(s.Quantile(0)), f(s.Max()), fmt.Sprint(s.N()))
	}
	mb := func(v float64) string { return inUnit(v, 1<<20) + " MiB" }
	msU := func(v float64) string { return ms(v) + " ms" }
	row("the guest's run time, no snapshots", plain, msU)
	row(fmt.Sprintf("the guest's run time, a snapshot every %s", every), snapped, msU)
	row("with / without (each round's ratio)", slowdown, func(v float64) string { return fmt.Sprintf("%.3fx", v) })
	row("snapshots per run", count, num)
	row("the guest's memory (its peak)", peak, mb)
	row("the guest's pause per snapshot (unwind, copy its non-zero pages, rewind)", pause, msU)
	row("a whole snapshot: encoded size", parts["whole/size"], mb)
	row("a whole snapshot: encoding it (S2, beside the guest)", parts["whole/encode"], msU)
	row("a whole snapshot: writing it to SQLite (a file, fsynced, then a fenced transaction)", parts["whole/write"], msU)
	row("a delta: encoded size", parts["delta/size"], mb)
	row("a delta: encoding it (hashing every page)", parts["delta/encode"], msU)
	row("a delta: appending it to the stored whole in SQLite", parts["delta/write"], msU)
	t.Notes = append(t.Notes, "Each round runs chase once without snapshots and once with them (the order "+
		"rotated each round), both on one resumable runtime (sandbox.Config.Resumable: what resumable code "+
		"costs is measured apart, docs/design/snapshots.md); the pause per snapshot is that round's difference of the two run times over its "+
		"snapshots. After each round, the run's last snapshot is encoded whole and saved to a SQLite store "+
		"(sandbox.Snapshot.Encode, tasks.Store.SaveSnapshot), then the one before it is saved whole and the last "+
		"encoded as a delta after it and appended (EncodeDelta, AppendSnapshot): what a later snapshot of an "+
		"attempt stores. The two are "+every.String()+" apart; chase is linking its memory (rounds 0), so a "+
		"large share of its pages changes between them: a guest that writes less makes smaller deltas.")

	at := defaultSnapshotEvery.Seconds()
	pct := func(ns float64) string { return fmt.Sprintf("%.2f%%", 100*ns/1e9/at) }
	guest := pause.Median() / 1e9 / at
	wholeWall := parts["whole/encode"].Median() + parts["whole/write"].Median()
	wholeCPU := parts["whole/encode/cpu"].Median() + parts["whole/write/cpu"].Median()
	deltaWall := parts["delta/encode"].Median() + parts["delta/write"].Median()
	deltaCPU := parts["delta/encode/cpu"].Median() + parts["delta/write/cpu"].Median()
	met := "**met**"
	if guest > snapshotGoal {
		met = "**NOT met**"
	}
	gt := res.NewTable(fmt.Sprintf("At the default snapshots.every (%s): the share of the guest's run time and of one core", defaultSnapshotEvery),
		"cost of one snapshot every "+defaultSnapshotEvery.String(), "share", "from (medians per snapshot)")
	gt.AddRow("the guest's pause: share of its run time", pct(pause.Median()), msU(pause.Median()))
	gt.AddRow("background work, every snapshot whole: CPU, share of one core", pct(wholeCPU),
		fmt.Sprintf("%s CPU (%s wall) encoding and writing", msU(wholeCPU), msU(wholeWall)))
	gt.AddRow("background work, every snapshot after an attempt's first a delta: CPU, share of one core", pct(deltaCPU),
		fmt.Sprintf("%s CPU (%s wall) hashing, encoding and appending", msU(deltaCPU), msU(deltaWall)))
	gt.AddRow(fmt.Sprintf("goal (issue 39, item 8): at most %.0f%% of a long task's run time, for a guest of 256 MiB", 100*snapshotGoal),
		fmt.Sprintf("%.2f%%: %s", 100*guest, met), "the guest's pause")
	gt.Notes = append(gt.Notes, fmt.Sprintf("A task snapshotted every %s pauses once per %s of its run time; "+
		"the encoding and the write run beside the guest, on another core: on a machine whose cores are all busy "+
		"running guests they take that share of one core per such task. CPU is the process's user and system "+
		"time over the encoding and the write (S2 encodes on up to 2 goroutines); wall is their elapsed time, "+
		"which includes the fsync's wait. The pool stores an attempt's first snapshot whole and the later ones "+
		"as deltas, until the deltas would make the stored snapshot over twice its whole part.",
		defaultSnapshotEvery, defaultSnapshotEvery))
	return nil
}

// snapshotWrites encodes last whole and saves it, then saves prev whole
// and appends last as a delta after it, adding the time, CPU time and
// size of each to parts.
func snapshotWrites(ctx context.Context, store *sqlite.Store, lease tasks.Lease, prev, last *sandbox.Snapshot, parts map[string]*Series) error {
	timed := func(key string, f func() error) error {
		t0, c0 := time.Now(), processCPU()
		if err := f(); err != nil {
			return err
		}
		parts[key].AddDuration(time.Since(t0))
		parts[key+"/cpu"].AddDuration(processCPU() - c0)
		return nil
	}
	var whole bytes.Buffer
	if err := timed("whole/encode", func() error { return last.Encode(&whole) }); err != nil {
		return err
	}
	if err := timed("whole/write", func() error {
		return store.SaveSnapshot(ctx, lease, whole.Bytes(), tasks.SnapshotInfo{})
	}); err != nil {
		return err
	}
	parts["whole/size"].Values = append(parts["whole/size"].Values, float64(whole.Len()))

	whole.Reset()
	digest, err := prev.EncodeDelta(&whole, nil)
	if err != nil {
		return err
	}
	if err := store.SaveSnapshot(ctx, lease, whole.Bytes(), tasks.SnapshotInfo{}); err != nil {
		return err
	}
	var delta bytes.Buffer
	if err := timed("delta/encode", func() error { _, err := last.EncodeDelta(&delta, digest); return err }); err != nil {
		return err
	}
	if err := timed("delta/write", func() error {
		return store.AppendSnapshot(ctx, lease, whole.Len(), delta.Bytes(), tasks.SnapshotInfo{})
	}); err != nil {
		return err
	}
	parts["delta/size"].Values = append(parts["delta/size"].Values, float64(delta.Len()))
	return nil
}

// snapshotsShort is the short tasks' part of Snapshots: the queue's
// tasks/s with snapshots on and off.
func snapshotsShort(ctx context.Context, o Options, res *Result, tmp string) error {
	n, rounds, workers := o.pick(10000, 300), o.pick(6, 1), 2 // an even count: each variant goes first as often
	template := filepath.Join(tmp, "short-template", "stint.db")
	type variant struct {
		label string
		rt    *sandbox.Runtime
		cfg   pool.Config
		s     *Series
	}
	var vs []variant
	for _, on := range []bool{false, true} {
		rt, noop, err := noopRuntime(ctx, sandbox.Config{Resumable: on})
		if err != nil {
			return err
		}
		defer rt.Close(ctx)
		v := variant{label: "snapshots off", rt: rt, cfg: pool.Config{Workers: workers}}
		if on {
			v.label = fmt.Sprintf("snapshots on (a resumable runtime, snapshots.every %s)", defaultSnapshotEvery)
			v.cfg.SnapshotEvery = defaultSnapshotEvery
			v.s = res.NewSeries("snapshots/short/on", "tasks/s")
		} else {
			v.s = res.NewSeries("snapshots/short/off", "tasks/s")
			o.logf("snapshots: enqueueing %d noop tasks into a template store", n)
			if _, err := enqueue(ctx, template, noop, nil, n); err != nil {
				return err
			}
		}
		vs = append(vs, v)
	}
	onOff := res.NewSeries("snapshots/short/on-over-off", "ratio")
	for r := -1; r < rounds; r++ { // round -1 warms both up and is not recorded
		for _, i := range rotate([]int{0, 1}, r) {
			path, err := copyStore(template, filepath.Join(tmp, fmt.Sprintf("short-r%d-v%d", r, i)))
			if err != nil {
				return err
			}
			d, _, err := drain(ctx, path, vs[i].rt, vs[i].cfg, n)
			if err != nil {
				return err
			}
			_ = os.RemoveAll(filepath.Dir(path))
			if r < 0 {
				continue
			}
			vs[i].s.Values = append(vs[i].s.Values, float64(n)/d.Seconds())
			o.logf("snapshots: round %d, %s: %.0f tasks/s", r+1, vs[i].label, float64(n)/d.Seconds())
		}
		if r < 0 {
			continue
		}
		onOff.Values = append(onOff.Values, vs[1].s.Values[r]/vs[0].s.Values[r])
	}
	t := res.NewTable(fmt.Sprintf("Short tasks: the queue's tasks/s with snapshots on and off (%d pre-enqueued noop tasks, %d workers, SQLite)", n, workers),
		"variant", "median tasks/s", "min", "max", "on / off (median of each round's ratio)", "rounds")
	for i, v := range vs {
		r := ""
		if i == 1 {
			r = fmt.Sprintf("%.2fx", onOff.Median())
		}
		t.AddRow(v.label, num(v.s.Median()), num(v.s.Quantile(0)), num(v.s.Max()), r, fmt.Sprint(v.s.N()))
	}
	t.Notes = append(t.Notes, "Each round drains a fresh copy of one pre-built store with a pool.Pool, from Start "+
		"to the last task finished, snapshots off and on in turn (the order rotated each round), after a round "+
		"that warms both up and is not counted. A task shorter "+
		"than snapshots.every never takes a snapshot, and its claim reads none: only the resumable code and the "+
		"bookkeeping can cost.")
	return nil
}
