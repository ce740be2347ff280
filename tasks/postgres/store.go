package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/internal/specrow"
)

// clock is the store's now, at the stored precision (PostgreSQL keeps
// microseconds).
func (s *Store) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// maxTries is how many times a statement runs when PostgreSQL aborts it
// for a deadlock or a serialization failure (both roll it back whole).
const maxTries = 3

// retry runs fn again, up to maxTries times in all, while it fails with a
// deadlock or a serialization failure.
func retry(fn func() error) error {
	var err error
	for range maxTries {
		if err = fn(); !transient(err) {
			return err
		}
	}
	return err
}

// transient reports a deadlock or a serialization failure.
func transient(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// PutModule stores wasm under its hex sha256 and returns the hash. Storing
// the same bytes again stores nothing new. Empty bytes are refused.
func (s *Store) PutModule(ctx context.Context, wasm []byte) (string, error) {
	h, err := specrow.ModuleHash("postgres", wasm)
	if err != nil {
		return "", err
	}
	if _, err := s.pool.Exec(ctx, sqlPutModule, h, wasm, len(wasm), s.clock()); err != nil {
		return "", s.dbErr("put module", err)
	}
	return h, nil
}

// Module returns the bytes of the module with that hex sha256, or an error
// wrapping tasks.ErrModuleNotFound.
func (s *Store) Module(ctx context.Context, sha256 string) ([]byte, error) {
	return specrow.Module("postgres", sha256, func() ([]byte, error) {
		var b []byte
		err := s.pool.QueryRow(ctx, sqlModule, sha256).Scan(&b)
		return b, err
	}, pgx.ErrNoRows, s.dbErr)
}

// MaxInput is the largest task input the store takes: PostgreSQL's limit
// on one value (1 GB), less room for the protocol.
const MaxInput = 1_000_000_000

// Submit validates spec (tasks.Spec.Validate), fills in its defaults and
// queues it, ready at spec.RunAt (now when zero), in one statement, then
// notifies the schema's wake-up channel (see ListenWakeups). With an
// IdempotencyKey already used it returns that first task, whatever its
// state and spec, and existing=true; of concurrent submits with one key,
// one creates the task.
func (s *Store) Submit(ctx context.Context, spec tasks.Spec) (task tasks.Task, existing bool, err error) {
	now := s.clock()
	r, err := specrow.New(spec, now, MaxInput)
	if err != nil {
		return tasks.Task{}, false, fmt.Errorf("postgres: submit: %w", err)
	}
	spec = r.Spec
	var input []byte
	if len(spec.Input) > 0 {
		input = spec.Input
	}
	// A submit that meets the key of a task another submit is inserting
	// waits for that insert; then finds its task (committed) or inserts
	// (rolled back). A task deleted by Prune between the conflict and the
	// read: the next try inserts.
	for range maxTries {
		task, err = scanTask(s.pool.QueryRow(ctx, sqlSubmit,
			spec.Module, len(spec.Input), r.Args, r.Env, r.Mounts, r.Limits, spec.MaxAttempts, spec.Priority,
			spec.Queue, nullString(spec.IdempotencyKey), r.RunAt, now, input, r.Labels, nullString(spec.Export),
			nullString(spec.OnRetry), spec.Tenant))
		if err == nil {
			// The task row came back without its input, stored next to it.
			task.Input = bytes.Clone(input)
			s.notify()
			return task, false, nil
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" && pgErr.ConstraintName == "tasks_module_fkey" {
			return tasks.Task{}, false, fmt.Errorf("postgres: submit: %w: %s (store it first)", tasks.ErrModuleNotFound, spec.Module)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return tasks.Task{}, false, s.dbErr("submit", err)
		}
		// ON CONFLICT DO NOTHING: the idempotency key is taken.
		task, err = scanTask(s.pool.QueryRow(ctx, sqlTaskByKey, spec.IdempotencyKey))
		if err == nil {
			return task, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return tasks.Task{}, false, s.dbErr("submit", err)
		}
	}
	return tasks.Task{}, false, fmt.Errorf("postgres: submit: idempotency key %q: the task holding it kept disappearing; try again",
		spec.IdempotencyKey)
}

// Get returns the task with that id, or an error wrapping tasks.ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (tasks.Task, error) {
	t, err := scanTask(s.pool.QueryRow(ctx, sqlTaskByID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return tasks.Task{}, fmt.Errorf("postgres: task %d: %w", id, tasks.ErrNotFound)
	}
	if err != nil {
		return tasks.Task{}, s.dbErr("get", err)
	}
	return t, nil
}

// stateCond is the condition on the task row t of a list's state: a
// known constant (checked), written into the query so that the planner can
// use the partial index for that state. StateClaimed is stored as running.
func stateCond(st tasks.State) string {
	if st == tasks.StateClaimed {
		return `t.state = 'running' AND t.began_at IS NULL`
	}
	return `t.state = '` + string(st) + `'`
}

// DefaultListLimit is the page size of List when ListFilter.Limit is 0.
const DefaultListLimit = 100

// List returns the tasks matching f by ascending id (an empty, non-nil
// slice when none), without their inputs and results.
func (s *Store) List(ctx context.Context, f tasks.ListFilter) ([]tasks.Task, error) {
	return s.listPage(ctx, "list", f.State, f.Queue, f.Limit, ascending, f.AfterID)
}

// A listOrder is the way a list pages: the condition on t.id after the
// id a page starts from ($%d), and the order of the ids.
type listOrder struct{ from, order string }

var (
	ascending  = listOrder{` AND t.id > $%d`, ` ORDER BY t.id`}
	descending = listOrder{` AND t.id < $%d`, ` ORDER BY t.id DESC`}
)

// listPage returns up to limit tasks (0: DefaultListLimit) in state and
// in queue when they are given, in order o from id from (0: from the
// first), without their inputs and results (an empty, non-nil slice when
// none); op names the call in errors.
func (s *Store) listPage(ctx context.Context, op string, state tasks.State, queue string, limit int, o listOrder, from int64) ([]tasks.Task, error) {
	if state != "" && !state.Valid() && state != tasks.StateClaimed {
		return nil, fmt.Errorf("postgres: %s: unknown state %q", op, state)
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	q := `SELECT ` + listCols + ` FROM tasks t WHERE true`
	var args []any
	if from > 0 {
		args = append(args, from)
		q += fmt.Sprintf(o.from, len(args))
	}
	if state != "" {
		// A known constant (checked above), written into the query so that
		// the planner can use the partial index for that state.
		q += ` AND ` + stateCond(state)
	}
	if queue != "" {
		args = append(args, queue)
		q += fmt.Sprintf(` AND t.queue = $%d`, len(args))
	}
	args = append(args, limit)
	q += o.order + fmt.Sprintf(` LIMIT $%d`, len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.dbErr(op, err)
	}
	out, err := scanTasks(rows)
	if err != nil {
		return nil, s.dbErr(op, err)
	}
	if out == nil {
		out = []tasks.Task{}
	}
	return out, nil
}

// Attempts returns the task's attempt records, oldest first; an error
// wrapping tasks.ErrNotFound for an unknown task.
func (s *Store) Attempts(ctx context.Context, id int64) ([]tasks.Attempt, error) {
	rows, err := s.pool.Query(ctx, sqlAttempts, id)
	if err != nil {
		return nil, s.dbErr("attempts", err)
	}
	defer rows.Close()
	out := []tasks.Attempt{}
	for rows.Next() {
		a := tasks.Attempt{TaskID: id}
		var started, ended *time.Time
		var reason, stderr, from *string
		if err := rows.Scan(&a.Number, &a.Owner, &started, &ended, &a.Outcome, &a.ExitCode, &reason, &a.Counted, &a.Resumed, &stderr, &a.Work, &from); err != nil {
			return nil, s.dbErr("attempts", err)
		}
		a.StartedAt, a.EndedAt = utc(started), utc(ended)
		if from != nil {
			a.ResumedFrom = specrow.ReadResumedFrom(*from)
		}
		if reason != nil {
			a.Reason = *reason
		}
		if stderr != nil {
			a.Stderr = *stderr
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.dbErr("attempts", err)
	}
	if len(out) == 0 {
		var ok bool
		if err := s.pool.QueryRow(ctx, sqlExists, id).Scan(&ok); err != nil {
			return nil, s.dbErr("attempts", err)
		}
		if !ok {
			return nil, fmt.Errorf("postgres: attempts of task %d: %w", id, tasks.ErrNotFound)
		}
	}
	return out, nil
}

// Checkpoint returns the task's stored checkpoint: nil if none, a non-nil
// (possibly empty) slice otherwise; an error wrapping tasks.ErrNotFound for
// an unknown task.
func (s *Store) Checkpoint(ctx context.Context, id int64) ([]byte, error) {
	var size int
	var blob []byte
	err := s.pool.QueryRow(ctx, sqlCheckpointOf, id).Scan(&size, &blob)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: checkpoint of task %d: %w", id, tasks.ErrNotFound)
	}
	if err != nil {
		return nil, s.dbErr("checkpoint", err)
	}
	return tasks.CheckpointOf(size, blob), nil
}

// Claim first takes over the expired leases of every queue: each such
// attempt is recorded as "lost" (not counted, ended at the lease expiry),
// its task's lost streak grows by one, and the task goes back to the
// queue, ready since the lease expired (dead when its streak reaches
// req.LostLimit, see tasks.Store.Claim; cancelled when cancellation was
// requested). Then it moves up to req.Max ready tasks to running, by
// priority (highest first), RunAt, then id, each with its checkpoint. With
// req.Queues non-nil it claims only from the listed queues with a positive
// maximum, up to that maximum each. req.Max <= 0 claims nothing; req.Owner
// must be set and req.Lease positive.
//
// Both statements go in one round trip and one transaction. Concurrent
// claims, from this Store or other runners, lock the rows they take with
// FOR UPDATE SKIP LOCKED: they take different tasks and never wait for
// each other. A claim whose reply is lost after PostgreSQL committed it
// (the connection lost, or ctx ended, at that moment) leaves its tasks
// running under a lease nobody holds: the Store remembers such a claim,
// and its next Claim gives those tasks back first, in the same round trip,
// as Release would (nothing recorded or counted). Until then, or if no
// Claim comes (the process ends), they wait out their lease: the next
// start of that owner recovers them, or another runner takes them over.
func (s *Store) Claim(ctx context.Context, req tasks.ClaimRequest) ([]tasks.Claimed, error) {
	k, err := s.planClaim(ctx, req)
	if err != nil || k == nil {
		return nil, err
	}
	return s.claimRun(ctx, k)
}

// claimRun runs a planned claim.
func (s *Store) claimRun(ctx context.Context, k *claimPlan) ([]tasks.Claimed, error) {
	var out []tasks.Claimed
	var reaped int64
	err := retry(func() error {
		b := &pgx.Batch{}
		k.queue(b)
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		var err error
		if out, reaped, err = k.read(br); err != nil {
			return err
		}
		return br.Close()
	})
	if err == nil && k.tenanted {
		out, err = s.claimFair(ctx, k, out)
	}
	return s.claimDone(ctx, k, out, reaped, err)
}

// claimPlan is a claim's statements and what its results need.
type claimPlan struct {
	q     string
	args  []any
	owner string
	now   time.Time
	lost  []lostClaim // claims whose reply was lost, given back first
	// lostLimit is the request's lost-attempt limit (tasks.LostLimit).
	lostLimit int
	// req is the request, without its paused queues; paused are the
	// paused queues when it names none. tenanted is set by read: some
	// queued task names a tenant, and the ordered claim took nothing (its
	// noTenants guard): claimRun claims fairly instead (claimFair).
	req      tasks.ClaimRequest
	paused   []string
	tenanted bool
	// fairOnly skips the probe and the ordered claim: the last claim was
	// fair (Store.fairLast), so claimFair runs at once.
	fairOnly bool
	// order is a fair claim's order (nil: the ordered claim's).
	order []int64
	// expect is how many tasks the claim statement is likely to return:
	// scanClaimed sizes its result for that many at once (a runner's
	// claims of hundreds of 656-byte Claimed otherwise grew it ten times
	// over, copying each).
	expect int
}

// planClaim checks req and builds its statements; nil when there is
// nothing to claim. It takes the lost claims to give back: claimDone
// must follow.
func (s *Store) planClaim(ctx context.Context, req tasks.ClaimRequest) (*claimPlan, error) {
	if req.Owner == "" {
		return nil, errors.New("postgres: claim: empty owner")
	}
	if req.Lease <= 0 {
		return nil, fmt.Errorf("postgres: claim: lease %v is not positive", req.Lease)
	}
	if req.Max <= 0 {
		return nil, nil
	}
	req, paused, none, err := s.unpaused(ctx, req)
	if err != nil || none {
		return nil, err
	}
	q, args := sqlClaimAll, []any(nil)
	now := s.clock()
	expiry := now.Add(req.Lease)
	args = append(args, req.Owner, expiry, now, req.Max)
	if req.Queues != nil {
		var names []string
		var maxima []int
		for name, n := range req.Queues {
			if n > 0 {
				names = append(names, name)
				maxima = append(maxima, min(n, req.Max))
			}
		}
		if len(names) == 0 {
			return nil, nil
		}
		q = sqlClaimQueues
		args = append(args, names, maxima)
	} else if len(paused) > 0 {
		q = sqlClaimAllUnpaused
		args = append(args, paused)
	}
	return &claimPlan{q: q, args: args, owner: req.Owner, now: now, lost: s.takeLostClaims(),
		lostLimit: tasks.LostLimit(req.LostLimit), req: req, paused: paused, fairOnly: s.fairLast.Load(),
		expect: int(min(s.lastClaimed.Load(), int64(req.Max)))}, nil
}

// queue adds the claim's statements to b: the lost claims given back,
// expired leases reaped, the claim.
func (k *claimPlan) queue(b *pgx.Batch) {
	if len(k.lost) > 0 {
		var owners []string
		var started, expiries []time.Time
		for _, c := range k.lost {
			owners, started, expiries = append(owners, c.owner), append(started, c.started), append(expiries, c.expiry)
		}
		b.Queue(sqlUnclaim, k.now, owners, started, expiries)
	}
	b.Queue(sqlReap, k.reapArgs()...)
	if k.fairOnly {
		k.tenanted = true
		return
	}
	b.Queue(sqlTenanted)
	b.Queue(k.q, k.args...)
}

// reapArgs are sqlReap's arguments: now, the lost-attempt limit and its
// reason.
func (k *claimPlan) reapArgs() []any {
	return []any{k.now, k.lostLimit, tasks.LostLimitReason(k.lostLimit)}
}

// read reads the results of the statements queue added.
func (k *claimPlan) read(br pgx.BatchResults) (out []tasks.Claimed, reaped int64, err error) {
	if len(k.lost) > 0 {
		if _, err := br.Exec(); err != nil {
			return nil, 0, err
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return nil, 0, err
	}
	reaped = tag.RowsAffected()
	if k.fairOnly {
		return nil, reaped, nil
	}
	if err := br.QueryRow().Scan(&k.tenanted); err != nil {
		return nil, 0, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, 0, err
	}
	out, err = k.scanClaimed(rows)
	return out, reaped, err
}

// scanClaimed reads the tasks a claim statement returns, into a result
// sized for k.expect of them. Every row is scanned through one list of
// destinations, r's and blob's, cleared before each row (so nothing a row
// decoded is reused by the next).
func (k *claimPlan) scanClaimed(rows pgx.Rows) (out []tasks.Claimed, err error) {
	defer rows.Close()
	var r taskRow
	var blob []byte
	dest := append(r.dest(), &blob)
	for rows.Next() {
		if out == nil {
			out = make([]tasks.Claimed, 0, max(k.expect, 1))
		}
		r, blob = taskRow{}, nil
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		t, err := r.task()
		if err != nil {
			return nil, err
		}
		out = append(out, tasks.Claimed{
			Task:       t,
			Lease:      tasks.Lease{TaskID: t.ID, Owner: k.owner, Token: t.Attempt},
			Checkpoint: tasks.CheckpointOf(t.CheckpointSize, blob),
		})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// claimDone ends a claim: on err, remembers it as lost if its reply may
// have been (and the lost claims it was to give back); otherwise logs
// and sorts what it claimed.
func (s *Store) claimDone(ctx context.Context, k *claimPlan, out []tasks.Claimed, reaped int64, err error) ([]tasks.Claimed, error) {
	lost := k.lost
	if err != nil {
		if unavailable(err) || ctx.Err() != nil {
			// Its reply may be what was lost: the next claim gives back
			// what this one took, if it committed.
			lost = append(lost, lostClaim{owner: k.owner, started: k.now, expiry: k.args[1].(time.Time)})
		}
		s.putLostClaims(lost)
		return nil, s.dbErr("claim", err)
	}
	if len(lost) > 0 {
		s.log.Info("gave back the tasks of claims whose reply was lost", zap.Int("claims", len(lost)))
	}
	if reaped > 0 {
		s.lostAttempts.Add(reaped)
		s.log.Warn("took over expired leases", zap.Int64("attempts_lost", reaped), zap.String("owner", k.owner))
	}
	tasks.SortClaimed(out, k.order)
	s.lastClaimed.Store(int64(len(out)))
	return out, nil
}

// lostClaim is a claim that failed with its connection, after PostgreSQL
// may have committed it: its owner, claim time and lease expiry (what
// sqlUnclaim matches).
type lostClaim struct {
	owner           string
	started, expiry time.Time
}

// maxLostClaims bounds the lost claims remembered: a claim fails this way
// only while the database is unreachable, and claims back off meanwhile.
// Past it the oldest are forgotten (their tasks, if any, wait out their
// lease and are taken over).
const maxLostClaims = 1024

// takeLostClaims returns the lost claims to give back at the next claim,
// and forgets them (putLostClaims puts back those not given back).
func (s *Store) takeLostClaims() []lostClaim {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	l := s.lostClaims
	s.lostClaims = nil
	return l
}

// putLostClaims remembers lost claims again (the claim that was to give
// them back failed), keeping the newest maxLostClaims.
func (s *Store) putLostClaims(l []lostClaim) {
	if len(l) == 0 {
		return
	}
	s.lmu.Lock()
	defer s.lmu.Unlock()
	s.lostClaims = append(s.lostClaims, l...)
	if n := len(s.lostClaims); n > maxLostClaims {
		s.lostClaims = slices.Delete(s.lostClaims, 0, n-maxLostClaims)
	}
}

// leaseInfo is where a task stands, to explain a refused write.
type leaseInfo struct {
	state, owner string
	attempt      int
}

// leaseInfos reads where the tasks of ids stand (absent: not found).
func (s *Store) leaseInfos(ctx context.Context, ids []int64) (map[int64]leaseInfo, error) {
	rows, err := s.pool.Query(ctx, sqlLeaseOf, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]leaseInfo, len(ids))
	for rows.Next() {
		var id int64
		var li leaseInfo
		if err := rows.Scan(&id, &li.state, &li.owner, &li.attempt); err != nil {
			return nil, err
		}
		out[id] = li
	}
	return out, rows.Err()
}

// leaseError explains why a write carrying lease l changed nothing, from
// where its task stands: tasks.ErrNotFound or tasks.ErrStaleLease.
func leaseError(op string, l tasks.Lease, li leaseInfo, found bool) error {
	if !found {
		return fmt.Errorf("postgres: %s: task %d: %w", op, l.TaskID, tasks.ErrNotFound)
	}
	now := fmt.Sprintf("the task is %s", li.state)
	if li.state == string(tasks.StateRunning) {
		now += fmt.Sprintf(" as attempt %d of %q", li.attempt, li.owner)
	}
	return fmt.Errorf("postgres: %s: task %d attempt %d of %q: %w (%s)", op, l.TaskID, l.Token, l.Owner,
		tasks.ErrStaleLease, now)
}

// staleError explains the refused write of one lease.
func (s *Store) staleError(ctx context.Context, op string, l tasks.Lease) error {
	infos, err := s.leaseInfos(ctx, []int64{l.TaskID})
	if err != nil {
		return s.dbErr(op, err)
	}
	li, ok := infos[l.TaskID]
	return leaseError(op, l, li, ok)
}

// stateError explains why an operation that applies to some states
// changed nothing: tasks.ErrNotFound or tasks.ErrInvalidState.
func (s *Store) stateError(ctx context.Context, op string, id int64) error {
	var state string
	err := s.pool.QueryRow(ctx, sqlStateOf, id).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: %s: task %d: %w", op, id, tasks.ErrNotFound)
	}
	if err != nil {
		return s.dbErr(op, err)
	}
	return fmt.Errorf("postgres: %s: task %d is %s: %w", op, id, state, tasks.ErrInvalidState)
}

// leaseArrays are the parallel arrays of a batch of leases, sorted by task
// id (the order the statement locks the rows in).
func leaseArrays(leases []tasks.Lease) (ids []int64, owners []string, tokens []int) {
	sorted := slices.Clone(leases)
	slices.SortFunc(sorted, func(a, b tasks.Lease) int { return cmp.Compare(a.TaskID, b.TaskID) })
	for _, l := range sorted {
		ids = append(ids, l.TaskID)
		owners = append(owners, l.Owner)
		tokens = append(tokens, l.Token)
	}
	return ids, owners, tokens
}

// Heartbeat extends every lease still held to now+extend, in one
// statement. A lease is lost when its task is no longer running under
// that owner and token (an expired lease that nobody took over is still
// held, and renewed). cancel lists the held leases whose task's
// cancellation was requested.
func (s *Store) Heartbeat(ctx context.Context, leases []tasks.Lease, extend time.Duration) (lost, cancel []tasks.Lease, err error) {
	if len(leases) == 0 {
		return nil, nil, nil
	}
	if extend <= 0 {
		return nil, nil, fmt.Errorf("postgres: heartbeat: extension %v is not positive", extend)
	}
	now := s.clock()
	ids, owners, tokens := leaseArrays(leases)
	held := map[tasks.Lease]bool{}
	err = retry(func() error {
		clear(held)
		rows, err := s.pool.Query(ctx, sqlHeartbeat, now.Add(extend), now, ids, owners, tokens)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var l tasks.Lease
			var c bool
			if err := rows.Scan(&l.TaskID, &l.Owner, &l.Token, &c); err != nil {
				return err
			}
			held[l] = c
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, s.dbErr("heartbeat", err)
	}
	for _, l := range leases {
		c, ok := held[l]
		switch {
		case !ok:
			lost = append(lost, l)
		case c:
			cancel = append(cancel, l)
		}
	}
	return lost, cancel, nil
}

// SaveCheckpoint replaces the task's checkpoint with blob (nil stores an
// empty checkpoint) if lease still holds the task, drops the task's
// snapshot (the newer of the two wins) and ends its lost streak, in one
// statement; it has committed when it returns nil.
func (s *Store) SaveCheckpoint(ctx context.Context, lease tasks.Lease, blob []byte) error {
	if blob == nil {
		blob = []byte{}
	}
	var tag pgconn.CommandTag
	err := retry(func() (err error) {
		tag, err = s.pool.Exec(ctx, sqlCheckpoint, len(blob), s.clock(), lease.TaskID, lease.Owner, lease.Token, blob)
		return err
	})
	if err != nil {
		return s.dbErr("save checkpoint", err)
	}
	if tag.RowsAffected() == 0 {
		return s.staleError(ctx, "save checkpoint", lease)
	}
	return nil
}

// Progress records done of total if lease still holds the task.
func (s *Store) Progress(ctx context.Context, lease tasks.Lease, done, total int64) error {
	tag, err := s.pool.Exec(ctx, sqlProgress, done, total, s.clock(), lease.TaskID, lease.Owner, lease.Token)
	if err != nil {
		return s.dbErr("progress", err)
	}
	if tag.RowsAffected() == 0 {
		return s.staleError(ctx, "progress", lease)
	}
	return nil
}

// Complete ends the attempts of cs in one statement (one transaction),
// each only if its lease still holds the task (errs[i] wraps
// tasks.ErrStaleLease, or tasks.ErrNotFound, otherwise;
// tasks.ErrInvalidState for a State that does not end an attempt). For
// each: the task takes c.State (see tasks.Completion.State for when the
// store changes it), a requeued task becomes ready at c.RunAt (now when
// zero), a succeeded task stores c.Result, any other stores
// c.Attempt.Reason (when set) as LastError, a counted attempt adds one
// failure, a terminal state sets FinishedAt, and the attempt record is
// kept (StartedAt defaults to the claim time, EndedAt to now, Outcome to
// one derived from the state, Resumed is also set when the attempt was
// handed a checkpoint). The checkpoint is kept in every case; the
// snapshot is kept unless the task ended (dropped then), and the task's
// lost streak ends. A task requeued ready at once (an interrupted attempt) notifies the wake-up
// channel, so that another runner may take it. When the batch itself
// fails, err is set and every errs[i] is err.
func (s *Store) Complete(ctx context.Context, cs []tasks.Completion) (errs []error, err error) {
	c := s.planComplete(cs)
	if len(c.order) > 0 {
		err = retry(func() error {
			rows, err := s.pool.Query(ctx, sqlComplete, c.args...)
			if err != nil {
				return err
			}
			return c.read(rows)
		})
	}
	return s.completeDone(ctx, cs, c, err)
}

// completePlan is a Complete's statement and what its results need.
type completePlan struct {
	errs  []error
	order []int // the completions written, by task id
	again []int // leases given again in the batch: refused
	args  []any // sqlComplete's
	done  map[int]bool
	ready bool // a task is queued again, ready now
}

// planComplete checks cs and builds sqlComplete's arguments.
func (s *Store) planComplete(cs []tasks.Completion) *completePlan {
	errs := make([]error, len(cs))
	now := s.clock()
	// The completions to write, by task id; a lease given again in the
	// batch is written once (the first), the others refused after.
	var order []int
	first := map[tasks.Lease]int{}
	var again []int
	for i, c := range cs {
		switch c.State {
		case tasks.StateSucceeded, tasks.StateQueued, tasks.StateDead, tasks.StateCancelled:
		default:
			errs[i] = fmt.Errorf("postgres: complete: task %d: %w: an attempt cannot end in state %q",
				c.Lease.TaskID, tasks.ErrInvalidState, c.State)
			continue
		}
		if _, dup := first[c.Lease]; dup {
			again = append(again, i)
			continue
		}
		first[c.Lease] = i
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cs[a].Lease.TaskID, cs[b].Lease.TaskID) })
	n := len(order)
	var (
		ids, resIDs                = make([]int64, 0, n), []int(nil)
		owners, states, outcomes   = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		tokens, sizes, exits, ords = make([]int, 0, n), make([]int, 0, n), make([]int, 0, n), make([]int, 0, n)
		counted, resumed           = make([]bool, 0, n), make([]bool, 0, n)
		runAts, ended              = make([]time.Time, 0, n), make([]time.Time, 0, n)
		started                    = make([]*time.Time, 0, n)
		reasons, stderrs           = make([]*string, 0, n), make([]*string, 0, n)
		works                      = make([]int64, 0, n)
		inRow                      = make([]bool, 0, n)
		froms                      = make([]*string, 0, n)
		results                    [][]byte
	)
	for _, i := range order {
		c := cs[i].Resolved(now)
		a := c.Attempt
		var st *time.Time
		if !a.StartedAt.IsZero() {
			t := a.StartedAt
			st = &t
		}
		size := len(c.Result)
		if size > 0 {
			resIDs = append(resIDs, i)
			results = append(results, c.Result)
		}
		ids = append(ids, c.Lease.TaskID)
		owners = append(owners, c.Lease.Owner)
		tokens = append(tokens, c.Lease.Token)
		states = append(states, string(c.State))
		counted = append(counted, a.Counted)
		runAts = append(runAts, c.RunAt)
		sizes = append(sizes, size)
		reasons = append(reasons, nullString(a.Reason))
		stderrs = append(stderrs, nullString(a.Stderr))
		works = append(works, a.Work)
		started = append(started, st)
		ended = append(ended, a.EndedAt)
		outcomes = append(outcomes, a.Outcome)
		exits = append(exits, a.ExitCode)
		resumed = append(resumed, a.Resumed)
		froms = append(froms, specrow.ResumedFrom(a.ResumedFrom))
		inRow = append(inRow, c.Lease.Token == 1 && c.State == tasks.StateSucceeded && a.Outcome == "succeeded" &&
			a.ExitCode == 0 && a.Reason == "" && !a.Counted && !a.Resumed)
		ords = append(ords, i)
	}
	return &completePlan{errs: errs, order: order, again: again, done: make(map[int]bool, n),
		args: []any{now, ids, owners, tokens, states, counted, runAts, sizes,
			reasons, started, ended, outcomes, exits, resumed, ords, resIDs, results, stderrs, works, inRow, froms}}
}

// read reads sqlComplete's rows (and closes them).
func (c *completePlan) read(rows pgx.Rows) error {
	clear(c.done)
	c.ready = false
	defer rows.Close()
	for rows.Next() {
		var i int
		var r bool
		if err := rows.Scan(&i, &r); err != nil {
			return err
		}
		c.done[i] = true
		c.ready = c.ready || r
	}
	return rows.Err()
}

// completeDone ends a Complete whose statement ended with err: the
// wake-up sent, the refused completions explained.
func (s *Store) completeDone(ctx context.Context, cs []tasks.Completion, c *completePlan, err error) ([]error, error) {
	errs, order, again, done := c.errs, c.order, c.again, c.done
	if err != nil {
		err = s.dbErr("complete", err)
		for i := range errs {
			errs[i] = err
		}
		return errs, err
	}
	if c.ready {
		s.notify()
	}
	// Explain the refused ones (rare): where their tasks stand now.
	var refused []int
	for _, i := range order {
		if !done[i] {
			refused = append(refused, i)
		}
	}
	refused = append(refused, again...)
	if len(refused) == 0 {
		return errs, nil
	}
	rids := make([]int64, len(refused))
	for k, i := range refused {
		rids[k] = cs[i].Lease.TaskID
	}
	infos, ierr := s.leaseInfos(ctx, rids)
	for _, i := range refused {
		if ierr != nil {
			errs[i] = fmt.Errorf("postgres: complete: task %d attempt %d of %q: %w (and reading why failed: %w)",
				cs[i].Lease.TaskID, cs[i].Lease.Token, cs[i].Lease.Owner, tasks.ErrStaleLease, s.dbErr("complete", ierr))
			continue
		}
		li, ok := infos[cs[i].Lease.TaskID]
		errs[i] = leaseError("complete", cs[i].Lease, li, ok)
	}
	return errs, nil
}

// MarkBegun records, in one statement, that workers began the attempts
// of leases; a lease no longer held, or already marked, is skipped.
func (s *Store) MarkBegun(ctx context.Context, leases []tasks.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	now := s.clock()
	ids, owners, tokens := leaseArrays(leases)
	err := retry(func() error {
		_, err := s.pool.Exec(ctx, sqlMarkBegun, now, ids, owners, tokens)
		return err
	})
	if err != nil {
		return s.dbErr("mark begun", err)
	}
	return nil
}

// Release puts back in the queue, in one statement, the tasks of the
// leases that still hold them, as if they had not been claimed: attempt
// number restored (the next claim hands out the same token again), lease
// cleared, no attempt recorded, failures, run_at and checkpoint unchanged;
// a task whose cancellation was requested becomes cancelled instead. A
// lease that no longer holds its task (ended, taken over, released
// already, unknown task) is skipped. A released task notifies the
// wake-up channel, so that another runner may take it at once.
func (s *Store) Release(ctx context.Context, leases []tasks.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	now := s.clock()
	ids, owners, tokens := leaseArrays(leases)
	var n int
	var queued bool
	err := retry(func() error {
		n, queued = 0, false
		rows, err := s.pool.Query(ctx, sqlRelease, now, ids, owners, tokens)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q bool
			if err := rows.Scan(&q); err != nil {
				return err
			}
			n++
			queued = queued || q
		}
		return rows.Err()
	})
	if err != nil {
		return s.dbErr("release", err)
	}
	if queued {
		s.notify()
	}
	s.log.Debug("released claimed tasks", zap.Int("tasks", n), zap.Int("leases", len(leases)))
	return nil
}

// Cancel cancels a queued task at once (FinishedAt set), or sets
// CancelRequested on a running one and returns it still running (the
// worker sees it in Heartbeat's cancel list and ends the attempt). An
// error wraps tasks.ErrInvalidState for a terminal task, tasks.ErrNotFound
// for an unknown one.
func (s *Store) Cancel(ctx context.Context, id int64) (tasks.Task, error) {
	t, err := scanTask(s.pool.QueryRow(ctx, sqlCancel, s.clock(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return tasks.Task{}, s.stateError(ctx, "cancel", id)
	}
	if err != nil {
		return tasks.Task{}, s.dbErr("cancel", err)
	}
	return t, nil
}

// Retry puts a dead or cancelled task back in the queue, ready now, with
// its failure count, lost streak and cancellation request reset (its
// attempt number, history and checkpoint are kept; it has no snapshot,
// dropped when it ended), and notifies the wake-up channel. An
// error wraps tasks.ErrInvalidState for a task in another state,
// tasks.ErrNotFound for an unknown one.
func (s *Store) Retry(ctx context.Context, id int64) (tasks.Task, error) {
	t, err := scanTask(s.pool.QueryRow(ctx, sqlRetry, s.clock(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return tasks.Task{}, s.stateError(ctx, "retry", id)
	}
	if err != nil {
		return tasks.Task{}, s.dbErr("retry", err)
	}
	s.notify()
	return t, nil
}
