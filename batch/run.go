package batch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/internal/termsafe"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/shutdown"
	"github.com/stint-run/stint/tasks"
)

// batchClaimAhead is the pool's ClaimAhead in a batch.
const batchClaimAhead = 500 * time.Millisecond

// batchClaimBatch is the pool's ClaimBatch in a batch (4x what was then
// the pool's default), as its pool is alone on its queue (claiming ahead
// hoards nothing from other runners). Short tasks are then claimed and completed
// in larger transactions, and their outputs, which the writers take as
// their completions arrive, are written in larger groups (fewer syncfs
// and folder fsyncs): 10,000 small files on tmpfs went 1.18x as fast as
// with 64 (docs/design/batch.md, "Reading each input once, and the other cuts
// of a batch's per-file cost").
const batchClaimBatch = 256

// withDefaults fills the zero fields of c.
func (c Config) withDefaults() Config {
	if c.ModuleName == "" {
		c.ModuleName = "module"
	}
	if c.Sync == "" {
		c.Sync = SyncAuto
	}
	if c.Workers == 0 {
		c.Workers = c.Runner.Pool.Workers
	}
	if c.Workers <= 0 {
		c.Workers = runtime.NumCPU()
	}
	if c.Spec.MaxAttempts == 0 {
		c.Spec.MaxAttempts = 1
	}
	if c.Spec.Limits.Stdout == 0 {
		// An output is a file: the runner's default cap (1 MiB, for a
		// result kept in the store) failed 3% of ordinary files.
		c.Spec.Limits.Stdout = c.Runner.Pool.Policy.Max.Stdout
		if c.Spec.Limits.Stdout <= 0 {
			c.Spec.Limits.Stdout = DefaultStdout
		}
	}
	if c.HoldBytes == 0 {
		c.HoldBytes = DefaultHoldBytes
	}
	if c.Open == nil {
		c.Open = stint.Open
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// validate reports the fields of c that cannot work (after withDefaults).
func (c Config) validate() error {
	var errs []error
	if c.Sync != SyncAuto && c.Sync != SyncFile {
		errs = append(errs, fmt.Errorf("sync %q (--sync, Config.Sync): want %s or %s", c.Sync, SyncAuto, SyncFile))
	}
	if c.Spec.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("batch: Config.Spec.MaxAttempts %d: want 1 or more (0: 1)", c.Spec.MaxAttempts))
	}
	// The spec every input's task is made from, as the runner will check
	// each (its queue is the batch's: a name of fixed length).
	spec := c.Spec
	spec.Queue, spec.IdempotencyKey, spec.Input = Queue(c.Out), "", nil
	if err := tasks.CheckSpec(spec, c.Runner.Pool.Policy); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return &InputError{Err: errors.Join(errs...)}
	}
	return nil
}

// Run runs the batch c describes until every input is done, ctx is
// cancelled, or (with c.HandleSignals) a signal stops it; a stop is the
// phased stop of c.Shutdown, and the outputs of every input that finished
// are written before Run returns.
//
// Before any work it checks c: an error there is an *InputError, and
// nothing was written. Inputs that fail do not make Run fail: the
// Summary counts them and says why (Failures). A batch stopped before
// every input was done returns its Summary and a *StoppedError (run the
// same Config again to resume it); one whose attempts the store could not
// all record returns its Summary and an error wrapping ErrUnrecorded. Any
// other error (the store, the module's compilation) comes with no
// Summary.
func Run(ctx context.Context, c Config) (Summary, error) {
	start := time.Now()
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return Summary{}, err
	}
	log := c.Logger
	outAbs, err := filepath.Abs(c.Out)
	if err != nil || c.Out == "" {
		return Summary{}, checkOutDir(c.Out)
	}
	// A walk of --in does not go into the output folder.
	var skipOut func(fs.FileInfo) bool
	if ofi, err := os.Stat(outAbs); err == nil {
		skipOut = func(fi fs.FileInfo) bool { return os.SameFile(fi, ofi) }
	}
	inputs, inDirs, err := listInputs(c, skipOut)
	if err != nil {
		return Summary{}, err
	}
	if err := nameInputs(inputs, c); err != nil {
		return Summary{}, err
	}
	// The inputs are opened relative to inDirs until the process ends:
	// never closed here, as an abandoned attempt may still read an input
	// (a closed descriptor's number could be another file's by then).
	maxInput := c.Runner.Pool.Policy.MaxInput
	if err := checkInputSizes(inputs, maxInput); err != nil {
		return Summary{}, err
	}
	// By device and inode, not by path: an Out that is a link to In, or
	// names it another way, is the folder of the inputs too. Checked
	// again on the folder the batch opens to write (openOutDir).
	if fi, err := os.Stat(outAbs); err == nil {
		if err := checkNotInputDir(c.Out, fi, inDirs); err != nil {
			return Summary{}, err
		}
	}
	if err := checkOutDir(outAbs); err != nil {
		return Summary{}, err
	}
	queue := Queue(outAbs)
	base := c.Spec
	base.Queue = queue
	base.Module, base.IdempotencyKey, base.Input = "", "", nil // checked by validate
	workers := c.Workers

	b := &batchRun{cfg: c, log: log, queue: queue, maxInput: maxInput, inputs: inputs, start: start, left: len(inputs), unannounced: len(inputs),
		byID: map[int64]*batchInput{}, workers: workers,
		adopted: make(chan struct{}), allDone: make(chan struct{}), writersDone: make(chan struct{}), halt: make(chan struct{}),
		runningIn: map[int64]*batchInput{}}
	b.cond = sync.NewCond(&b.mu)
	b.hold.left = max(c.HoldBytes, 0)
	rc := c.Runner
	rc.Pool.Workers = workers
	// The pool counts the tasks it claimed ahead against a queue's
	// concurrency, so a queue limited to the workers (0) would never be
	// claimed ahead, two tasks a transaction: the workers bound what runs
	// at once anyway.
	rc.Pool.Queues = map[string]int{queue: workers + batchClaimBatch}
	rc.Pool.ClaimBatch = batchClaimBatch
	// The batch's pool is alone on its queue: claiming further ahead
	// hoards nothing (a stop releases what no worker started), and a
	// loaded machine, whose slower attempts shrink the claim-ahead, still
	// claims and completes in batches.
	rc.Pool.ClaimAhead = batchClaimAhead
	if user := rc.Pool.OnEvent; user != nil {
		rc.Pool.OnEvent = func(e pool.Event) { b.onEvent(e); user(e) }
	} else {
		rc.Pool.OnEvent = b.onEvent
	}
	rc.Pool.Input = b.inputFor
	// It runs its own queue alone: the store's schedules are left to the
	// runners that serve it (their tasks would wait here unclaimed).
	rc.ScheduleEvery = -1
	r, err := c.Open(ctx, rc)
	if err != nil {
		return Summary{}, err
	}
	b.store = r.Store()
	writing := false // the writers run
	closeRunner := func(err error) (Summary, error) {
		if writing {
			b.closeJobs()
			<-b.writersDone
		}
		return Summary{}, errors.Join(err, r.Close(context.Background()))
	}
	mod, err := r.Runtime().Compile(ctx, c.Module)
	if err != nil {
		var me *sandbox.ModuleError
		if errors.As(err, &me) {
			return closeRunner(inputErrorf("module %s does not compile: %w", c.ModuleName, err))
		}
		return closeRunner(fmt.Errorf("compiling %s: %w", c.ModuleName, err))
	}
	if err := r.Runtime().NameInCache(mod, c.CacheName); err != nil {
		log.Debug("compilation cache: naming the module", zap.Error(err)) // a cache's bookkeeping: never the batch's
	}
	// The checks passed: from here on the batch writes.
	out, removed, err := openOutDir(outAbs, c.Sync, func(fi fs.FileInfo) error { return checkNotInputDir(c.Out, fi, inDirs) })
	if err != nil {
		return closeRunner(err)
	}
	b.out = newOutTree(out, "", c.Sync)
	b.errOut = newOutTree(out, StderrDir, c.Sync)
	log.Debug("batch outputs", zap.Bool("syncfs", out.usesSyncfs()))
	if removed > 0 {
		log.Info("removed temporary files a stopped batch left", zap.Int("files", removed))
	}
	sha, err := r.PutModule(ctx, c.Module) // the module is hashed once per batch
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
	// Submit while the pool runs where that is safe (submit.go).
	var sub *batchSubmitter
	if b.freshQueue(ctx, queue) {
		sub = newBatchSubmitter()
		log.Info("batch starting", zap.Int("inputs", len(inputs)), zap.Int("workers", workers),
			zap.Bool("submitting_while_running", true), zap.Duration("prepared_in", time.Since(start)))
	} else {
		if err := b.submit(ctx, r, base, sha, nil); err != nil {
			return closeRunner(err)
		}
		if err := b.cancelStrays(ctx, queue); err != nil {
			return closeRunner(err)
		}
		b.submissionEnded()
		n := b.counts()
		log.Info("batch starting", zap.Int("inputs", n.Total), zap.Int("already_done", n.AlreadyDone),
			zap.Int("to_run", n.Left), zap.Int("workers", workers), zap.Duration("prepared_in", time.Since(start)))
	}

	// The coordinator's report is logged below only for a batch a signal
	// stopped: at a normal end its phases are empty.
	slog := log.Named("shutdown")
	if slog.Core().Enabled(zap.InfoLevel) {
		slog = slog.WithOptions(zap.IncreaseLevel(zap.WarnLevel))
	}
	coord, err := shutdown.New(c.Shutdown, shutdown.Options{Logger: slog})
	if err != nil {
		return closeRunner(&InputError{Err: err})
	}
	if err := coord.Register(r); err != nil {
		return closeRunner(err)
	}
	hooks := append(r.Hooks(),
		// After the workers (20): every attempt is recorded, its ended
		// event in; before the store closes (90): the writers read results.
		shutdown.Hook{Name: "outputs", Priority: shutdown.PriorityOutputs, Run: b.finishWriting},
		shutdown.Hook{Name: "logs", Priority: shutdown.PriorityLogs, Run: func(context.Context) error { _ = log.Sync(); return nil }})
	var subFailed <-chan struct{} // nil: never
	if sub != nil {
		if err := coord.Register(sub); err != nil {
			return closeRunner(err)
		}
		// Before the workers (20) and the store (90): a submission a stop
		// cut short ends its chunk first.
		hooks = append(hooks, shutdown.Hook{Name: "submit", Priority: shutdown.PrioritySubmit, Run: sub.wait})
		subFailed = sub.failed
	}
	for _, h := range hooks {
		if t, ok := c.HookTimeouts[h.Name]; ok {
			h.Timeout = t
		}
		if err := coord.AddHook(h); err != nil {
			return closeRunner(err)
		}
	}
	// From here on the coordinator's hooks close the runner.
	stopSignals := func() {}
	if c.HandleSignals {
		stopSignals = coord.HandleSignals(ctx)
		defer stopSignals()
		defer noticeSignals(func(n int, sig os.Signal) {
			if s, ok := sig.(syscall.Signal); ok {
				b.signal.CompareAndSwap(0, int32(s))
			}
			if c.OnSignal != nil {
				c.OnSignal(n)
			}
		})()
	}
	if err := r.Start(ctx); err != nil {
		if sub != nil {
			sub.end(nil) // never started: nothing for the stop to wait for
		}
		coord.Shutdown(context.Background())
		return Summary{}, err
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
	r.Wake()
	stopWatching := func() {}
	if c.OnRun != nil {
		if f := c.OnRun(&Status{b: b}); f != nil {
			stopWatching = f
		}
	}
	halted := false
	select {
	case <-b.allDone:
	case <-coord.Done():
	case <-ctx.Done():
	case <-subFailed:
	case <-b.halt:
		halted = true
	}
	if halted {
		log.Warn("batch halting: inputs failed", zap.String("halt", c.Halt.String()))
		if c.Halt.Now {
			coord.Escalate() // the stop below goes straight to the forced stop
		} else {
			// No input starts any more; the running ones finish (those
			// claimed ahead are given back), then the stop below.
			if sub != nil {
				sub.StopIntake()
			}
			r.StopIntake()
			select {
			case <-r.Idle():
			case <-coord.Done():
			case <-ctx.Done():
			}
		}
	}
	stopWatching()
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
			return Summary{}, err
		}
	}
	if signalled {
		rep.Log(log.Named("shutdown"))
	}
	return b.summary(rep, r.PoolStats(), halted)
}

// Plan is what Run would do with c, done by no one: the inputs listed and
// named (outputs, arguments) and checked as Run checks them, without
// opening a store, making Out or writing anything. Its error is an
// *InputError.
func Plan(c Config) ([]Planned, error) {
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if c.Out == "" {
		return nil, inputErrorf("--out is required: the folder the outputs are written to")
	}
	outAbs, err := filepath.Abs(c.Out)
	if err != nil {
		return nil, inputErrorf("--out %s: %v", termsafe.String(c.Out), err)
	}
	var skipOut func(fs.FileInfo) bool
	ofi, statErr := os.Stat(outAbs)
	if statErr == nil {
		skipOut = func(fi fs.FileInfo) bool { return os.SameFile(fi, ofi) }
	}
	inputs, inDirs, err := listInputs(c, skipOut)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, d := range inDirs {
			_ = d.Close()
		}
	}()
	if statErr == nil {
		if err := checkNotInputDir(c.Out, ofi, inDirs); err != nil {
			return nil, err
		}
	}
	if err := nameInputs(inputs, c); err != nil {
		return nil, err
	}
	if err := checkInputSizes(inputs, c.Runner.Pool.Policy.MaxInput); err != nil {
		return nil, err
	}
	plan := make([]Planned, len(inputs))
	for i, in := range inputs {
		plan[i] = Planned{Seq: in.seq, Input: in.listed, Output: filepath.Join(c.Out, in.out), Args: in.args}
	}
	return plan, nil
}

// checkNotInputDir refuses an output folder (fi, of the folder out
// names, followed if a link) that is one of the folders of the inputs.
func checkNotInputDir(out string, fi fs.FileInfo, inDirs []*inputDir) error {
	for _, d := range inDirs {
		if d.sameDir(fi) {
			return collisionErrorf("--out %s is the folder of the inputs (%s): the outputs would overwrite them; give another folder", termsafe.String(out), termsafe.String(d.path))
		}
	}
	return nil
}

// summary is what the batch did, and Run's error for it.
func (b *batchRun) summary(rep shutdown.Report, st pool.Stats, halted bool) (Summary, error) {
	c := b.counts()
	b.mu.Lock()
	failures := append([]Failure{}, b.failures...)
	b.mu.Unlock()
	el := time.Since(b.start)
	s := Summary{Module: b.cfg.ModuleName, In: b.cfg.In, FilesFrom: b.cfg.FilesFrom, Out: b.cfg.Out, Total: c.Total, Succeeded: c.Succeeded,
		AlreadyDone: c.AlreadyDone, Failed: c.Failed, SkippedFailed: c.SkippedFailed, Left: c.Left, Interrupted: rep.Cooperative + rep.Forced,
		Stopped: c.Left > 0, Seconds: el.Seconds(), Failures: failures}
	if halted && s.Stopped {
		s.Halted, s.Halt = true, b.cfg.Halt.String()
	}
	if el > 0 {
		s.Rate = float64(c.Succeeded+c.Failed) / el.Seconds()
	}
	switch {
	case s.Stopped:
		return s, &StoppedError{Done: s.Total - s.Left, Total: s.Total, Left: s.Left, Interrupted: s.Interrupted}
	case st.Unrecorded > 0:
		return s, unrecordedError{n: st.Unrecorded}
	}
	return s, nil
}

// batchRun is one batch: its inputs, the outputs written, the counts
// Status and the Summary show.
type batchRun struct {
	cfg   Config
	log   *zap.Logger
	store tasks.Store
	queue string
	// maxInput is the pool's Policy.MaxInput: the largest input read.
	maxInput int64
	out      *outTree
	// errOut is the tree of failed inputs' stderr (StderrDir).
	errOut *outTree
	// byID maps each submitted task to its input, under idMu: built by
	// the submission, which may run while the pool does (submit.go).
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
	// runningIn are the inputs whose attempt runs, by task (RunningInputs).
	runningIn map[int64]*batchInput
	// left counts the inputs not counted yet in succeeded, failed, already
	// or skipped: it moves with them, under mu, so that a Counts never has
	// more done than Total minus Left. unannounced counts those not yet
	// given to Config.OnDone (markDone): at 0 allDone closes.
	left, unannounced int
	// succeeded and failed count the inputs that ended in this run;
	// already those that had succeeded before.
	succeeded, failed, already int
	// skipped counts the inputs that failed in an earlier run, not tried
	// again (Config.SkipFailed).
	skipped int
	// keptLimits counts the inputs whose task keeps the limits an earlier
	// run stored it with, other than this run's (adopt).
	keptLimits  int
	failures    []Failure
	allDone     chan struct{}
	writersDone chan struct{}
	// halt is closed once Config.Halt is reached.
	halt     chan struct{}
	haltOnce sync.Once
	// signal is the number of the first stop signal received (0: none).
	signal atomic.Int32
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

// onEvent is the pool's OnEvent: it must not block.
func (b *batchRun) onEvent(e pool.Event) {
	switch e.Kind {
	case pool.EventCheckpointed:
		if in := b.input(e.TaskID); in != nil {
			b.log.Debug("input checkpointed", zap.String("input", in.path), zap.Int64("task", e.TaskID))
		}
	case pool.EventStarted:
		in := b.input(e.TaskID)
		b.mu.Lock()
		b.running++
		if in != nil {
			b.runningIn[e.TaskID] = in
		}
		b.mu.Unlock()
	case pool.EventEnded:
		b.mu.Lock()
		b.running--
		delete(b.runningIn, e.TaskID)
		b.mu.Unlock()
		in := b.input(e.TaskID)
		if in == nil {
			return
		}
		if !e.State.Terminal() {
			b.stopped(in, e.Attempt)
			return
		}
		b.releaseData(in)
		b.push(batchJob{in: in, state: e.State, attempt: e.Attempt, result: e.Result})
	}
}

// stopped tells Config.OnStopped of an attempt that ended without ending
// its task, if the batch's stop ended it (an attempt that failed and is
// retried is not: its input's line comes when it ends).
func (b *batchRun) stopped(in *batchInput, at *tasks.Attempt) {
	if b.cfg.OnStopped == nil || at == nil {
		return
	}
	if k := sandbox.Kind(at.Outcome); k != sandbox.KindInterrupted && k != sandbox.KindForced {
		return
	}
	b.cfg.OnStopped(Result{Input: in.path, Name: in.out, Seq: in.seq, Args: in.args, TaskID: in.id, Attempt: at,
		Stopped: true, Signal: int(b.signal.Load())})
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

// markDone counts an input done and tells Config.OnDone (with its last
// attempt read from the store for an input done before, if
// Config.WantAttempt asks for it).
func (b *batchRun) markDone(r Result) {
	if b.cfg.OnDone != nil {
		if w := b.cfg.WantAttempt; w != nil && r.Attempt == nil && r.TaskID != 0 && (r.AlreadyDone || r.SkippedFailed) && w(r) {
			r.Attempt = b.lastAttempt(r.TaskID)
		}
		b.cfg.OnDone(r)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unannounced--
	if b.unannounced == 0 {
		close(b.allDone)
	}
}

// lastAttempt is task id's last attempt, nil if it has none or the store
// cannot tell.
func (b *batchRun) lastAttempt(id int64) *tasks.Attempt {
	as, err := b.store.Attempts(context.Background(), id)
	if err != nil || len(as) == 0 {
		if err != nil {
			b.log.Debug("reading an input's last attempt", zap.Int64("task", id), zap.Error(err))
		}
		return nil
	}
	return &as[len(as)-1]
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
// of a success (and removes a stale stderr file, StderrDir/NAME), the
// stderr file of a failure (and removes a stale output, that of an earlier
// version of the file).
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
	fails := make([]*Failure, len(js))
	sizes := make([]int, len(js)) // of the outputs
	files := make([]outputFile, 0, len(js))
	idx := make([]int, 0, len(js)) // files[k] is js[idx[k]]'s
	var errFiles []outputFile      // failures' stderr
	var errIdx []int               // errFiles[k] is js[errIdx[k]]'s
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
			sizes[i] = len(data)
			files, idx = append(files, outputFile{name: in.out, data: data, perm: in.perm}), append(idx, i)
			continue
		}
		fail := &Failure{Input: in.path, Outcome: string(j.state)}
		if at := j.attempt; at != nil {
			fail.Outcome, fail.ExitCode, fail.Reason, fail.StderrTail = at.Outcome, at.ExitCode, at.Reason, at.Stderr
		}
		if j.state == tasks.StateCancelled && fail.Reason == "" {
			fail.Reason = "cancelled (runner tasks cancel)"
		}
		fails[i] = fail
		errFiles, errIdx = append(errFiles, outputFile{name: in.out, data: []byte(fail.StderrTail), perm: in.perm}), append(errIdx, i)
	}
	for k, err := range b.out.writeFiles(files) {
		i := idx[k]
		in := js[i].in
		if err == nil {
			err = b.errOut.remove(in.out)
		}
		if err != nil {
			fails[i] = notWritten(in, err)
		}
	}
	for k, err := range b.errOut.writeFiles(errFiles) {
		i := errIdx[k]
		in := js[i].in
		if err != nil {
			fails[i].Reason += "; writing its stderr to " + b.errOut.path(in.out) + ": " + err.Error()
		} else {
			fails[i].StderrFile = b.errOut.path(in.out)
		}
		_ = b.out.remove(in.out)
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
		b.left--
	}
	halt := b.cfg.Halt.reached(b.failed, b.failed+b.succeeded)
	b.mu.Unlock()
	if halt {
		b.haltOnce.Do(func() { close(b.halt) })
	}
	for i, j := range js {
		r := Result{Input: j.in.path, Name: j.in.out, Seq: j.in.seq, Args: j.in.args, TaskID: j.in.id,
			AlreadyDone: j.earlier && fails[i] == nil, Failure: fails[i]}
		if !j.earlier {
			r.Attempt = j.attempt
		}
		if fails[i] == nil {
			r.OutputBytes = sizes[i]
		}
		b.markDone(r)
	}
}

// notWritten is the failure of an input whose task succeeded but whose
// output could not be written.
func notWritten(in *batchInput, err error) *Failure {
	return &Failure{Input: in.path, Outcome: "not_written",
		Reason: "the task succeeded but its output could not be written (the next run writes it): " + err.Error()}
}

// noticeSignals calls onSignal with 1 for the first stop signal and 2
// for the second, and the signal (the coordinator stops the batch; see
// HandleSignals).
func noticeSignals(onSignal func(n int, sig os.Signal)) func() {
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
			case sig := <-ch:
				if n++; n <= 2 {
					onSignal(n, sig)
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
