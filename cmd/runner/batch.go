package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
)

// runner batch's own exit codes (0: every input succeeded; 1 and 2 as
// for every command).
const (
	// exitBatchFailed: some inputs failed (see the summary).
	exitBatchFailed = 7
	// exitBatchStopped: a signal stopped the batch before every input was
	// done; the same command resumes it.
	exitBatchStopped = 75
)

// batchClaimAhead is the pool's ClaimAhead in a batch.
const batchClaimAhead = 500 * time.Millisecond

// batchClaimBatch is the pool's ClaimBatch in a batch: 4x the pool's
// default, as its pool is alone on its queue (claiming ahead hoards
// nothing from other runners). Short tasks are then claimed and completed
// in larger transactions, and their outputs, which the writers take as
// their completions arrive, are written in larger groups (fewer syncfs
// and folder fsyncs): 10,000 small files on tmpfs went 1.18x as fast as
// with 64 (docs/benchmarks.md).
const batchClaimBatch = 256

type batchFlags struct {
	taskFlags
	in, out     string
	jobs        int
	maxAttempts int
	asJSON      bool
	sync        string
}

func (a *app) batchCommand() *cobra.Command {
	var f batchFlags
	cmd := &cobra.Command{
		Use:   "batch MODULE.wasm --in DIR|GLOB --out DIR [-j N] [-- ARGS...]",
		Short: "Run a module over every file of a folder, writing each result to an output folder; resumable",
		Long: `Run MODULE.wasm once per input file (the file on the guest's stdin) and
write what it prints to --out/NAME, NAME being the input's file name. N tasks
run at once in this process (-j, default workers), from the embedded store in
data_dir: no runner serve needed.

Each output is written whole or not at all (a temporary file in --out, made
durable, then its name: linkat of an O_TMPFILE on Linux, else a rename; fsync
of the folder). On Linux the outputs that end together are written as a
group made durable by one syncfs(2) where the file system honours it (ext4,
xfs, btrfs, f2fs, tmpfs; Linux 5.8+), else by an fsync of each (--sync file
forces that; see docs/batch.md). An input that fails gets no output but
--out/NAME.stderr, the tail of the guest's stderr, and a line in the summary;
the others go on. --in is a folder (its files, not those starting with a dot,
not its subfolders) or a quoted glob like 'data/*.txt'.

Links in --in are not followed: --in's folder (a glob's part before its
first wildcard) is opened once, as named, and every input is opened
relative to it with O_NOFOLLOW and O_NONBLOCK and read only if it is a
regular file. An input that is a link (to anywhere, inside --in or out of
it), or a FIFO or device put in a file's place, fails with its reason; the
others run. An output (and NAME.stderr) is created with its input's mode &
0666, less the umask: never wider than the input's. --out may not be a
folder of the inputs, compared by device and inode (a link to --in is
refused too). Names and guest stderr are printed with control characters
escaped (\x1b); --json prints them exactly.

Stop it at any moment (Ctrl-C, SIGTERM): running guests may finish or save a
checkpoint (the phased stop, see docs/shutdown.md; a second signal forces
them), it prints what was done, and the same command resumes: inputs that
succeeded are skipped (their outputs are never written again), interrupted
ones continue from their checkpoints, new files are added, changed files run
again, failed ones are retried. After kill -9 or a power loss the same holds;
at most the attempts in flight run again. Each input's task is keyed by the
output folder, the module's sha256, the input's path and sha256, and the
arguments and environment. The store holds no copy of the inputs: the
batch reads each once to hash it and keeps its content in memory (up to
32 MiB in all) until its task ends, so an attempt runs the very content its
task is keyed by. An input it could not keep is read again at its attempt;
if it changed since the batch read it, it is not run (outcome
input_unavailable) and runs at the next run. Changed files run again at the
next run either way.

Before any work it checks that --in has files, that --out can be written,
that no input is over limits.max_input and that the module compiles;
otherwise it exits 2 and writes nothing.

Exit codes:
   0  every input succeeded
   1  error (the store, writing an output)
   2  bad usage, or a check before any work failed; nothing was written
   7  some inputs failed (see the summary and NAME.stderr)
  75  stopped by a signal before every input was done; run it again to resume`,
		Example: `  runner batch upper.wasm --in texts/ --out upper/
  runner batch convert.wasm --in 'scans/*.pgm' --out pbm/ -j 4 --timeout 30s -- --dither
  runner batch upper.wasm --in texts/ --out upper/ --json > summary.json`,
		Args: moduleAndGuestArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.args = guestArgs(f.args, args)
			return a.batch(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.in, "in", "", "input folder, or a quoted glob pattern ('data/*.txt'): one task per file")
	fl.StringVar(&f.out, "out", "", "output folder (created if missing): NAME per input, NAME.stderr for failures")
	fl.IntVarP(&f.jobs, "jobs", "j", 0, "inputs run at once (default: workers, the number of CPUs)")
	fl.IntVar(&f.maxAttempts, "max-attempts", 1, "failed attempts before an input counts as failed (interrupted attempts do not count)")
	fl.BoolVar(&f.asJSON, "json", false, "print the summary as JSON on stdout")
	fl.StringVar(&f.sync, "sync", syncAuto, "how outputs are made durable before they get their names: auto (one syncfs per group of outputs where the file system honours it, else an fsync per file) or file (an fsync per file)")
	fl.StringVar(&f.timeout, "timeout", "", "attempt timeout per input, like 30s (default limits.timeout)")
	fl.StringVar(&f.memory, "memory", "", "memory limit per input, like 64MiB (default limits.memory)")
	fl.StringVar(&f.stdoutCap, "stdout-cap", "", "largest output per input, like 8MiB (default limits.stdout)")
	fl.StringVar(&f.stderrCap, "stderr-cap", "", "most bytes the guest may write to stderr (default limits.stderr)")
	fl.StringVar(&f.checkpointCap, "checkpoint-cap", "", "largest checkpoint the guest may save (default limits.checkpoint)")
	fl.StringArrayVar(&f.args, "arg", nil, "argument for the guest (repeatable; or put them after --)")
	fl.StringArrayVar(&f.env, "env", nil, "K=V environment variable for the guest (repeatable; nothing else is passed)")
	return cmd
}

// batchRun is one `runner batch`: its inputs, the outputs written, the
// counts the progress line and the summary show.
type batchRun struct {
	a     *app
	store tasks.Store
	out   *outDir
	// byID maps each submitted task to its input, under idMu: built by
	// the submission, which may run while the pool does (batch_submit.go).
	idMu sync.RWMutex
	byID map[int64]*batchInput
	// adopted is closed (and replaced) each time a chunk of submitted
	// tasks is adopted, and nil once the submission ended (waitInput).
	adopted chan struct{}
	inputs  []*batchInput
	// queued counts the inputs whose task is known to be queued after
	// submit (new, queued before, or retried): if the queue holds as many
	// queued tasks, it holds no stray (cancelStrays).
	queued int
	start  time.Time
	// workers is -j: what runs at once.
	workers int
	// hold counts the input bytes held in memory (batchInput.data).
	hold holdBudget

	mu      sync.Mutex
	cond    *sync.Cond
	jobs    []batchJob // ended tasks whose files are to be written
	closed  bool       // no more jobs
	running int
	left    int // inputs whose outcome is not written yet
	// succeeded and failed count the inputs that ended in this run;
	// already those that had succeeded before.
	succeeded, failed, already int
	failures                   []batchFailure
	allDone                    chan struct{}
	writersDone                chan struct{}
}

// batchJob is a task that ended: its files are written by a writer.
type batchJob struct {
	in      *batchInput
	state   tasks.State
	attempt *tasks.Attempt
	// result is a success's output, from the pool's ended event; nil for
	// a task that succeeded in an earlier run (read from the store).
	result []byte
	// earlier: the task had succeeded in an earlier run.
	earlier bool
}

// batchFailure is one failed input in the summary.
type batchFailure struct {
	Input      string `json:"input"`
	Outcome    string `json:"outcome"`
	ExitCode   int    `json:"exit_code,omitempty"`
	Reason     string `json:"reason,omitempty"`
	StderrFile string `json:"stderr_file,omitempty"`
	StderrTail string `json:"stderr_tail,omitempty"`
}

// batchGCPercent is the GOGC of a batch unless GOGC is set: a batch's heap
// is small (a few MiB beside its held inputs) and it allocates fast, so
// the default 100 collects it several times a second; 200 made a batch of
// 10,000 small files 1.15x as fast (docs/benchmarks.md).
const batchGCPercent = 200

func (a *app) batch(ctx context.Context, modPath string, f batchFlags) error {
	start := time.Now()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(batchGCPercent)
	}
	// Every check first: an error here is exit 2, with nothing written.
	wasm, err := a.readModule(modPath)
	if err != nil {
		return err
	}
	inputs, inDirs, err := listInputs(f.in)
	if err != nil {
		return err
	}
	// The inputs are opened relative to inDirs until the process ends:
	// never closed here, as an abandoned attempt may still read an input
	// (a closed descriptor's number could be another file's by then).
	if err := checkInputSizes(inputs, a.cfg.Policy.MaxInput); err != nil {
		return err
	}
	outAbs, err := filepath.Abs(f.out)
	if err != nil || f.out == "" {
		return checkOutDir(f.out)
	}
	// By device and inode, not by path: an --out that is a link to --in,
	// or names it another way, is the folder of the inputs too. Checked
	// again on the folder the batch opens to write (openOutDir).
	if fi, err := os.Stat(outAbs); err == nil {
		if err := checkNotInputDir(f.out, fi, inDirs); err != nil {
			return err
		}
	}
	if err := checkOutDir(outAbs); err != nil {
		return err
	}
	if f.maxAttempts < 1 {
		return usageErrorf("--max-attempts must be at least 1")
	}
	if f.jobs < 0 {
		return usageErrorf("-j must be at least 1")
	}
	if f.sync != syncAuto && f.sync != syncFile {
		return usageErrorf("--sync %q: want auto or file", f.sync)
	}
	ti, err := f.parse()
	if err != nil {
		return err
	}
	queue := batchQueue(outAbs)
	base := ti.spec
	base.Queue, base.MaxAttempts = queue, f.maxAttempts
	check := base
	check.Module = strings.Repeat("0", 64)
	if err := checkSpec(check, a.cfg.Policy); err != nil {
		return err
	}
	workers := a.cfg.Workers
	if f.jobs > 0 {
		workers = f.jobs
	}

	b := &batchRun{a: a, inputs: inputs, start: start, left: len(inputs), byID: map[int64]*batchInput{}, workers: workers,
		adopted: make(chan struct{}), allDone: make(chan struct{}), writersDone: make(chan struct{})}
	b.cond = sync.NewCond(&b.mu)
	b.hold.left = batchHoldLimit()
	r, err := a.openRunner(ctx, func(c *stint.Config) {
		c.Pool.Workers = workers
		// The pool counts the tasks it claimed ahead against a queue's
		// concurrency, so a queue limited to the workers (0) would never be
		// claimed ahead, two tasks a transaction: the workers bound what
		// runs at once anyway.
		c.Pool.Queues = map[string]int{queue: workers + batchClaimBatch}
		c.Pool.ClaimBatch = batchClaimBatch
		// The batch's pool is alone on its queue: claiming further ahead
		// hoards nothing (a stop releases what no worker started), and a
		// loaded machine, whose slower attempts shrink the claim-ahead,
		// still claims and completes in batches.
		c.Pool.ClaimAhead = batchClaimAhead
		c.Pool.OnEvent = b.onEvent
		c.Pool.Input = b.inputFor
	})
	if err != nil {
		return err
	}
	b.store = r.Store()
	writing := false // the writers run
	closeRunner := func(err error) error {
		if writing {
			b.closeJobs()
			<-b.writersDone
		}
		return errors.Join(err, r.Close(context.Background()))
	}
	if _, err := r.Runtime().Compile(ctx, wasm); err != nil {
		var me *sandbox.ModuleError
		if errors.As(err, &me) {
			return closeRunner(usageErrorf("module %s does not compile: %v", modPath, err))
		}
		return closeRunner(fmt.Errorf("compiling %s: %w", modPath, err))
	}
	// The checks passed: from here on the batch writes.
	out, removed, err := openOutDir(outAbs, f.sync, func(fi fs.FileInfo) error { return checkNotInputDir(f.out, fi, inDirs) })
	if err != nil {
		return closeRunner(err)
	}
	b.out = out
	a.log.Debug("batch outputs", zap.Bool("syncfs", out.usesSyncfs()))
	if removed > 0 {
		a.log.Info("removed temporary files a stopped batch left", zap.Int("files", removed))
	}
	sha, err := r.PutModule(ctx, wasm) // the module is hashed once per batch
	if err != nil {
		return closeRunner(err)
	}
	var wg sync.WaitGroup
	for range batchWriters(workers, out.usesSyncfs()) {
		wg.Add(1)
		go func() { defer wg.Done(); b.writeLoop() }()
	}
	go func() { wg.Wait(); close(b.writersDone) }()
	writing = true
	// Submit while the pool runs where that is safe (batch_submit.go).
	var sub *batchSubmitter
	if b.freshQueue(ctx, queue) {
		sub = newBatchSubmitter()
		a.log.Info("batch starting", zap.Int("inputs", len(inputs)), zap.Int("workers", workers),
			zap.Bool("submitting_while_running", true), zap.Duration("prepared_in", time.Since(start)))
	} else {
		if err := b.submit(ctx, r, base, sha, nil); err != nil {
			return closeRunner(err)
		}
		if err := b.cancelStrays(ctx, queue); err != nil {
			return closeRunner(err)
		}
		b.submissionEnded()
		c := b.counts()
		a.log.Info("batch starting", zap.Int("inputs", c.total), zap.Int("already_done", c.already),
			zap.Int("to_run", c.left), zap.Int("workers", workers), zap.Duration("prepared_in", time.Since(start)))
	}

	// The coordinator's report is logged below only for a batch a signal
	// stopped: at a normal end its phases are empty.
	coord, err := shutdown.New(a.shutdownConfig(), shutdown.Options{Logger: a.log.Named("shutdown").WithOptions(zap.IncreaseLevel(zap.WarnLevel))})
	if err != nil {
		return closeRunner(&exitError{code: exitUsage, err: err})
	}
	if err := coord.Register(r); err != nil {
		return closeRunner(err)
	}
	hooks := append(r.Hooks(),
		// After the workers (20): every attempt is recorded, its ended
		// event in; before the store closes (90): the writers read results.
		shutdown.Hook{Name: "outputs", Priority: 25, Run: b.finishWriting},
		shutdown.Hook{Name: "logs", Priority: 100, Run: func(context.Context) error { _ = a.log.Sync(); return nil }})
	var subFailed <-chan struct{} // nil: never
	if sub != nil {
		if err := coord.Register(sub); err != nil {
			return closeRunner(err)
		}
		// Before the workers (20) and the store (90): a submission a stop
		// cut short ends its chunk first.
		hooks = append(hooks, shutdown.Hook{Name: "submit", Priority: 15, Run: sub.wait})
		subFailed = sub.failed
	}
	for _, h := range hooks {
		if t, ok := a.cfg.Shutdown.Hooks[h.Name]; ok {
			h.Timeout = t
		}
		if err := coord.AddHook(h); err != nil {
			return closeRunner(err)
		}
	}
	// From here on the coordinator's hooks close the runner.
	stopSignals := coord.HandleSignals(ctx)
	defer stopSignals()
	stopNotice := b.noticeSignals()
	defer stopNotice()
	if err := r.Start(ctx); err != nil {
		if sub != nil {
			sub.end(nil) // never started: nothing for the stop to wait for
		}
		coord.Shutdown(context.Background())
		return err
	}
	if sub != nil {
		go func() {
			// Not cancelled by ctx: a chunk is one transaction, let to end;
			// a stop ends the submission between chunks.
			err := b.submit(context.WithoutCancel(ctx), r, base, sha, sub.stopping)
			b.submissionEnded()
			sub.end(err)
		}()
	}
	r.Pool().Wake()
	prog := newBatchProgress(b, a.stderr, queue)
	stopProgress := prog.run()
	select {
	case <-b.allDone:
	case <-coord.Done():
	case <-ctx.Done():
	case <-subFailed:
	}
	stopProgress()
	signalled := false
	select {
	case <-b.allDone:
	default:
		signalled = true
	}
	rep := coord.Shutdown(context.Background())
	stopSignals()
	if sub != nil {
		if err := sub.error(); err != nil {
			// What was stored runs at the next run.
			return err
		}
	}
	if signalled {
		rep.Log(a.log.Named("shutdown"))
	}
	return b.finish(f, modPath, rep, r.Pool().Stats())
}

// checkNotInputDir refuses an output folder (fi, of the folder --out
// names, followed if a link) that is one of the folders of the inputs.
func checkNotInputDir(out string, fi fs.FileInfo, inDirs []*inputDir) error {
	for _, d := range inDirs {
		if d.sameDir(fi) {
			return usageErrorf("--out %s is the folder of the inputs (%s): the outputs would overwrite them; give another folder", termSafe(out), termSafe(d.path))
		}
	}
	return nil
}

// submit stores a task per input, in bulk, and sorts out what an earlier
// run of the same batch left: succeeded tasks are skipped (their output
// written from the store if it is missing), failed ones retried. The
// inputs stay in their files: a task's key is derived from the input's
// path and sha256, and its attempt reads the file (inputFor).
//
// stop, when not nil, is asked between chunks: true ends the submission
// there (the inputs not submitted are left for the next run). The pool may
// run meanwhile: each chunk's tasks are adopted under idMu, then
// chunkAdopted wakes the attempts that wait for them.
func (b *batchRun) submit(ctx context.Context, r *stint.Runner, base tasks.Spec, module string, stop func() bool) error {
	const chunkFiles = 500 // tasks per transaction: one multi-row insert
	var specs []tasks.Spec
	var chunk []*batchInput
	submitted := 0
	flush := func() error {
		if len(specs) == 0 {
			return nil
		}
		var subs []tasks.Submitted
		var err error
		cs, claiming := b.store.(tasks.ClaimingSubmitter)
		if claiming = claiming && stop != nil; claiming {
			// Submitting while the pool runs, on a queue that holds no
			// queued or running task: the new tasks are stored already
			// claimed by the pool, which runs them without a claim of its
			// own (a sixth of a batch's CPU on small files).
			subs, err = cs.SubmitManyClaimed(ctx, specs, r.Pool().Owner(), r.Pool().Lease())
		} else {
			subs, err = tasks.SubmitMany(ctx, b.store, specs) // one transaction per chunk
		}
		if err != nil {
			return fmt.Errorf("storing the tasks: %w", err)
		}
		var claimed []tasks.Claimed
		for i, s := range subs {
			if err := b.adopt(ctx, r, chunk[i], s); err != nil {
				return err
			}
			if claiming && !s.Existing {
				claimed = append(claimed, tasks.ClaimedOf(s.Task))
			}
		}
		b.chunkAdopted()
		if len(claimed) < len(subs) {
			r.Pool().Wake() // tasks queued for its claims
		}
		// Waits while the workers are busy and the claimed tasks already
		// wait for them; a stop gives back those not handed over.
		r.Pool().Adopt(claimed)
		submitted += len(specs)
		b.a.log.Debug("batch inputs submitted", zap.Int("submitted", submitted), zap.Int("inputs", len(b.inputs)))
		specs, chunk = specs[:0], chunk[:0]
		return nil
	}
	done := make(chan struct{})
	reads := b.readAhead(chunkFiles, done)
	defer func() { // ends the reading ahead, and waits for its end
		close(done)
		for range reads {
		}
	}()
	for read := range reads {
		for k, in := range read.inputs {
			if err := read.errs[k]; err != nil {
				b.push(batchJob{in: in, state: tasks.StateDead, attempt: &tasks.Attempt{Outcome: "unreadable", Reason: err.Error()}})
				continue
			}
			spec := base
			spec.Module = module
			spec.IdempotencyKey = batchKey(base.Queue, module, in.path, in.sha, base.Args, base.Env)
			specs, chunk = append(specs, spec), append(chunk, in)
			if len(specs) < chunkFiles {
				continue
			}
			if err := flush(); err != nil {
				return err
			}
			if stop != nil && stop() {
				b.a.log.Info("batch submission stopped: the inputs not submitted run at the next run",
					zap.Int("submitted", submitted), zap.Int("inputs", len(b.inputs)))
				return nil
			}
		}
	}
	return flush()
}

// adopt takes a submitted task into the batch.
func (b *batchRun) adopt(ctx context.Context, r *stint.Runner, in *batchInput, s tasks.Submitted) error {
	in.id = s.Task.ID
	switch {
	case !s.Existing, !s.Task.State.Terminal():
		b.setInput(in)
		if !s.Existing || s.Task.State == tasks.StateQueued {
			b.queued++
		}
	case s.Task.State == tasks.StateSucceeded:
		b.releaseData(in) // not run again
		// An output of the right size is this task's, written by an
		// earlier run: never written again.
		if size, ok := b.out.size(in.name); ok && size == int64(s.Task.ResultSize) {
			b.mu.Lock()
			b.already++
			b.mu.Unlock()
			b.markDone()
			return nil
		}
		b.setInput(in)
		b.push(batchJob{in: in, state: tasks.StateSucceeded, earlier: true})
	default: // dead or cancelled in an earlier run: once more
		t, err := r.Retry(ctx, in.id)
		if err != nil && !errors.Is(err, tasks.ErrInvalidState) {
			return fmt.Errorf("retrying the task of %s: %w", in.path, err)
		}
		if err == nil && t.State == tasks.StateQueued {
			b.queued++
		}
		b.setInput(in)
	}
	return nil
}

// setInput makes in known as its task's input.
func (b *batchRun) setInput(in *batchInput) {
	b.idMu.Lock()
	b.byID[in.id] = in
	b.idMu.Unlock()
}

// cancelStrays cancels the queued tasks of this batch's queue that are not
// one of its inputs now: those of files changed or removed since an
// earlier run (or of another module), which would otherwise run and
// write outputs that are no longer wanted.
func (b *batchRun) cancelStrays(ctx context.Context, queue string) error {
	if b.noStrays(ctx, queue) {
		return nil
	}
	const page = 500
	var after int64
	n := 0
	for {
		ts, err := b.store.List(ctx, tasks.ListFilter{State: tasks.StateQueued, Queue: queue, AfterID: after, Limit: page})
		if err != nil {
			return fmt.Errorf("listing the batch's tasks: %w", err)
		}
		for _, t := range ts {
			after = t.ID
			if b.input(t.ID) != nil {
				continue
			}
			if _, err := b.store.Cancel(ctx, t.ID); err != nil && !errors.Is(err, tasks.ErrInvalidState) {
				return fmt.Errorf("cancelling task %d of a file changed or removed since: %w", t.ID, err)
			}
			n++
		}
		if len(ts) < page {
			break
		}
	}
	if n > 0 {
		b.a.log.Info("cancelled the queued tasks of files changed or removed since the last run", zap.Int("tasks", n))
	}
	return nil
}

// queueCounts returns the number of tasks in each state of queue, from
// the store's counts (one read). False when the store cannot tell.
func (b *batchRun) queueCounts(ctx context.Context, queue string) (map[tasks.State]int64, bool) {
	sum, ok := b.store.(tasks.Summarizer)
	if !ok {
		return nil, false
	}
	c, err := sum.CountTasks(ctx)
	if err != nil {
		return nil, false
	}
	n := map[tasks.State]int64{}
	for _, qc := range c.ByQueue {
		if qc.Queue == queue {
			n[qc.State] += qc.Count
		}
	}
	return n, true
}

// noStrays reports that the queue holds no queued task but this batch's
// own, from the store's counts (one read instead of listing every queued
// task): as many are queued as this batch knows of its own. False when it
// cannot tell.
func (b *batchRun) noStrays(ctx context.Context, queue string) bool {
	n, ok := b.queueCounts(ctx, queue)
	return ok && n[tasks.StateQueued] == int64(b.queued)
}

// onEvent is the pool's OnEvent: it must not block.
func (b *batchRun) onEvent(e pool.Event) {
	switch e.Kind {
	case pool.EventCheckpointed:
		if in := b.input(e.TaskID); in != nil {
			b.a.log.Debug("input checkpointed", zap.String("input", in.path), zap.Int64("task", e.TaskID))
		}
	case pool.EventStarted:
		b.mu.Lock()
		b.running++
		b.mu.Unlock()
	case pool.EventEnded:
		b.mu.Lock()
		b.running--
		b.mu.Unlock()
		in := b.input(e.TaskID)
		if in == nil || !e.State.Terminal() {
			return
		}
		b.releaseData(in)
		b.push(batchJob{in: in, state: e.State, attempt: e.Attempt, result: e.Result})
	}
}

func (b *batchRun) push(j batchJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return // written at the next run
	}
	b.jobs = append(b.jobs, j)
	b.cond.Signal()
}

// popGroup waits for ended tasks and takes up to n of those queued; none
// once the jobs are closed and all taken.
func (b *batchRun) popGroup(n int) []batchJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.jobs) == 0 && !b.closed {
		b.cond.Wait()
	}
	n = min(n, len(b.jobs))
	js := make([]batchJob, n)
	copy(js, b.jobs)
	b.jobs = b.jobs[n:]
	return js
}

// closeJobs makes the writers exit once the jobs queued are written.
func (b *batchRun) closeJobs() {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
}

// finishWriting is the "outputs" shutdown hook: the files of the tasks
// that ended are written before the store closes.
func (b *batchRun) finishWriting(ctx context.Context) error {
	b.closeJobs()
	select {
	case <-b.writersDone:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("outputs not all written (the next run writes them from the store): %w", context.Cause(ctx))
	}
}

func (b *batchRun) markDone() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left--
	if b.left == 0 {
		close(b.allDone)
	}
}

// batchGroup is the most outputs a writer writes as one group (one
// durability barrier, one fsync of the folder).
const batchGroup = 256

// batchWriters is how many writers write outputs. Each takes what is
// queued (up to batchGroup) without waiting for more: a lone output is
// written at once, and the outputs that end while a group is being made
// durable form the next group. With syncfs, two let one group be written
// while the other's barrier runs; more would split the queue into smaller
// groups, each with its own barrier. With an fsync per file, more writers
// hide each other's fsync latency (16, or twice the workers).
func batchWriters(workers int, syncfs bool) int {
	if syncfs {
		return 2
	}
	return max(16, 2*workers)
}

// writeLoop writes the files of ended tasks, a group at a time: the output
// of a success (and removes a stale NAME.stderr), NAME.stderr for a
// failure (and removes a stale output, that of an earlier version of the
// file).
func (b *batchRun) writeLoop() {
	for {
		js := b.popGroup(batchGroup)
		if len(js) == 0 {
			return
		}
		b.writeGroup(js)
	}
}

// writeGroup writes the files of a group of ended tasks with one barrier.
func (b *batchRun) writeGroup(js []batchJob) {
	ctx := context.Background()
	fails := make([]*batchFailure, len(js))
	files := make([]outputFile, 0, len(js))
	idx := make([]int, 0, len(js)) // files[k] is js[idx[k]]'s
	for i, j := range js {
		in := j.in
		if j.state == tasks.StateSucceeded {
			data := j.result
			if j.earlier { // no event: the result is in the store
				t, err := b.store.Get(ctx, in.id)
				if err != nil {
					fails[i] = notWritten(in, err)
					continue
				}
				data = t.Result
			}
			files, idx = append(files, outputFile{name: in.name, data: data, perm: in.perm}), append(idx, i)
			continue
		}
		fail := &batchFailure{Input: in.path, Outcome: string(j.state)}
		if at := j.attempt; at != nil {
			fail.Outcome, fail.ExitCode, fail.Reason, fail.StderrTail = at.Outcome, at.ExitCode, at.Reason, at.Stderr
		}
		if j.state == tasks.StateCancelled && fail.Reason == "" {
			fail.Reason = "cancelled (runner tasks cancel)"
		}
		fails[i] = fail
		files, idx = append(files, outputFile{name: in.name + stderrSuffix, data: []byte(fail.StderrTail), perm: in.perm}), append(idx, i)
	}
	errs := b.out.writeFiles(files)
	for k, err := range errs {
		i := idx[k]
		in := js[i].in
		if js[i].state == tasks.StateSucceeded {
			if err == nil {
				err = b.out.remove(in.name + stderrSuffix)
			}
			if err != nil {
				fails[i] = notWritten(in, err)
			}
			continue
		}
		if err != nil {
			fails[i].Reason += "; writing " + in.name + stderrSuffix + ": " + err.Error()
		} else {
			fails[i].StderrFile = filepath.Join(b.out.dir, in.name+stderrSuffix)
		}
		_ = b.out.remove(in.name)
	}
	b.mu.Lock()
	for i, j := range js {
		switch {
		case fails[i] != nil:
			b.failed++
			b.failures = append(b.failures, *fails[i])
		case j.earlier:
			b.already++
		default:
			b.succeeded++
		}
	}
	b.mu.Unlock()
	for range js {
		b.markDone()
	}
}

// notWritten is the failure of an input whose task succeeded but whose
// output could not be written.
func notWritten(in *batchInput, err error) *batchFailure {
	return &batchFailure{Input: in.path, Outcome: "not_written",
		Reason: "the task succeeded but its output could not be written (the next run writes it): " + err.Error()}
}

// noticeSignals tells the user on a terminal what a signal does to the
// batch (the coordinator does it; see HandleSignals).
func (b *batchRun) noticeSignals() func() {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGTERM, os.Interrupt)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		n := 0
		for {
			select {
			case <-quit:
				return
			case <-ch:
				n++
				if n == 1 {
					fmt.Fprintln(b.a.stderr, "\rstopping: running inputs may finish or save a checkpoint; a second Ctrl-C forces them")
				} else if n == 2 {
					fmt.Fprintln(b.a.stderr, "\rforcing the running inputs to stop; they resume at the next run")
				}
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
			<-done
		})
	}
}
