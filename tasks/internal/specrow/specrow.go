package specrow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/stint-run/stint/tasks"
)

// Row is a validated spec, its defaults filled in, with the columns
// stored as JSON encoded (nil: NULL).
type Row struct {
	Spec tasks.Spec
	// RunAt is when the task is ready: Spec.RunAt, or now when zero, in
	// UTC to the microsecond (what both stores keep).
	RunAt                             time.Time
	Args, Env, Mounts, Limits, Labels *string
}

// New validates spec (tasks.Spec.Validate, and an input of at most
// maxInput bytes, the store's limit) and encodes its columns; the run-at
// time defaults to now.
func New(spec tasks.Spec, now time.Time, maxInput int) (Row, error) {
	if err := spec.Validate(); err != nil {
		return Row{}, err
	}
	if len(spec.Input) > maxInput {
		return Row{}, fmt.Errorf("%w: the input of %d bytes is over the store's maximum of %d",
			tasks.ErrInvalidSpec, len(spec.Input), maxInput)
	}
	spec = spec.WithDefaults()
	r := Row{Spec: spec, RunAt: spec.RunAt}
	if r.RunAt.IsZero() {
		r.RunAt = now
	}
	r.RunAt = r.RunAt.UTC().Truncate(time.Microsecond)
	var err1, err2, err3, err4, err5 error
	r.Args, err1 = jsonOrNull(spec.Args, len(spec.Args) == 0)
	r.Env, err2 = jsonOrNull(spec.Env, len(spec.Env) == 0)
	r.Mounts, err3 = jsonOrNull(spec.Mounts, len(spec.Mounts) == 0)
	r.Limits, err4 = jsonOrNull(spec.Limits, spec.Limits == tasks.Limits{})
	r.Labels, err5 = jsonOrNull(spec.Labels, len(spec.Labels) == 0)
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return Row{}, fmt.Errorf("%w: %w", tasks.ErrInvalidSpec, err)
	}
	return r, nil
}

// jsonOrNull marshals v, or returns NULL when empty is true.
func jsonOrNull(v any, empty bool) (*string, error) {
	if empty {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

// Many is New for each spec of a SubmitMany (the error naming the index
// of the first invalid one: "spec 3: ..."), with the indexes of the rows
// to insert, in order: a key repeated in specs is inserted at its first
// occurrence only, firstOf[key] (its later ones return that task).
func Many(specs []tasks.Spec, now time.Time, maxInput int) (rows []Row, send []int, firstOf map[string]int, err error) {
	rows = make([]Row, len(specs))
	for i, spec := range specs {
		if rows[i], err = New(spec, now, maxInput); err != nil {
			return nil, nil, nil, fmt.Errorf("spec %d: %w", i, err)
		}
	}
	firstOf = map[string]int{}
	for i, r := range rows {
		if k := r.Spec.IdempotencyKey; k != "" {
			if _, dup := firstOf[k]; dup {
				continue
			}
			firstOf[k] = i
		}
		send = append(send, i)
	}
	return rows, send, firstOf, nil
}

// Module is a store's Module: the bytes read gives for the hex sha256,
// or an error wrapping tasks.ErrModuleNotFound, named by backend, for a
// hash that is not one (read is not called) or a module not stored
// (read's error is notFound); any other error of read is dbErr's.
func Module(backend, sha256 string, read func() ([]byte, error), notFound error, dbErr func(op string, err error) error) ([]byte, error) {
	if !tasks.ValidModuleHash(sha256) {
		return nil, fmt.Errorf("%s: module %q: %w (not a hex sha256)", backend, sha256, tasks.ErrModuleNotFound)
	}
	b, err := read()
	if errors.Is(err, notFound) {
		return nil, fmt.Errorf("%s: module %s: %w", backend, sha256, tasks.ErrModuleNotFound)
	}
	if err != nil {
		return nil, dbErr("module", err)
	}
	return b, nil
}

// ModuleHash is the hash PutModule stores wasm under, its hex sha256, or
// an error, begun by backend, for empty bytes.
func ModuleHash(backend string, wasm []byte) (string, error) {
	if len(wasm) == 0 {
		return "", fmt.Errorf("%s: put module: the module is empty", backend)
	}
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:]), nil
}

// ResumedFrom is Attempt.ResumedFrom as both stores keep it: JSON, or
// nil (NULL) for none.
func ResumedFrom(info *tasks.SnapshotInfo) *string {
	if info == nil {
		return nil
	}
	b, _ := json.Marshal(info) // a struct of plain fields: it cannot fail
	s := string(b)
	return &s
}

// ReadResumedFrom reads back what ResumedFrom stored ("": none; a value
// it cannot read, which only another program could have written: none).
func ReadResumedFrom(s string) *tasks.SnapshotInfo {
	var info tasks.SnapshotInfo
	if s == "" || json.Unmarshal([]byte(s), &info) != nil {
		return nil
	}
	return &info
}
