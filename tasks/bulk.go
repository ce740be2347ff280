package tasks

import (
	"context"
	"fmt"
)

// Submitted is one result of Store.SubmitMany: the task, and whether it already
// existed (same idempotency key).
type Submitted struct {
	Task     Task `json:"task"`
	Existing bool `json:"existing"`
}

// SubmitMany validates every spec (ValidateSpecs: the same error whatever
// the store) and stores them with s.SubmitMany, in one transaction.
func SubmitMany(ctx context.Context, s Store, specs []Spec) ([]Submitted, error) {
	if err := ValidateSpecs(specs); err != nil {
		return nil, err
	}
	return s.SubmitMany(ctx, specs)
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
