package tasks

import (
	"context"
	"fmt"
)

// Submitted is one result of SubmitMany: the task, and whether it already
// existed (same idempotency key).
type Submitted struct {
	Task     Task `json:"task"`
	Existing bool `json:"existing"`
}

// BulkSubmitter is a Store that stores many tasks in one transaction
// (both backends are).
type BulkSubmitter interface {
	// SubmitMany is Submit for every spec of specs, in one transaction,
	// with one wake-up: results[i] is the outcome of specs[i]. Every spec
	// is validated first (Spec.Validate, and the store's own limits); an
	// invalid one, or one whose module is not stored, fails the whole call
	// with an error that names its index (wrapping ErrInvalidSpec or
	// ErrModuleNotFound), and nothing is stored. Idempotency keys behave
	// as in Submit: a key already used returns the first task with
	// Existing set, and a key repeated inside specs makes one task, its
	// later occurrences returned with Existing set (as successive Submits
	// would).
	SubmitMany(ctx context.Context, specs []Spec) ([]Submitted, error)
}

// SubmitMany submits specs through s's SubmitMany when it has one
// (BulkSubmitter), else with one Submit each. Either way it validates
// every spec first, and an invalid one stores nothing. Without
// BulkSubmitter the submits are not one transaction: when one fails, the
// tasks submitted before it stay stored, and their results come back
// with the error.
func SubmitMany(ctx context.Context, s Store, specs []Spec) ([]Submitted, error) {
	if err := ValidateSpecs(specs); err != nil {
		return nil, err
	}
	if b, ok := s.(BulkSubmitter); ok {
		return b.SubmitMany(ctx, specs)
	}
	out := make([]Submitted, 0, len(specs))
	for i, spec := range specs {
		t, existing, err := s.Submit(ctx, spec)
		if err != nil {
			return out, fmt.Errorf("spec %d: %w", i, err)
		}
		out = append(out, Submitted{Task: t, Existing: existing})
	}
	return out, nil
}

// ValidateSpecs is Spec.Validate for each spec, the error naming the
// index of the first invalid one ("spec 3: invalid task spec: ...").
func ValidateSpecs(specs []Spec) error {
	for i, spec := range specs {
		if err := spec.Validate(); err != nil {
			return fmt.Errorf("spec %d: %w", i, err)
		}
	}
	return nil
}
