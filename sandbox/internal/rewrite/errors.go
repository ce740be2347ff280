package rewrite

import "fmt"

// Error is a module Prepare refuses: malformed, over one of its Limits,
// or importing what it may not. The sandbox reports it as a ModuleError
// of kind invalid_module, or bad_import when BadImport is set; Error
// returns the same text that ModuleError's Error does.
type Error struct {
	BadImport bool
	Message   string
}

// Error implements error.
func (e *Error) Error() string {
	if e.BadImport {
		return "bad_import: " + e.Message
	}
	return "invalid_module: " + e.Message
}

// overLimit is the error for a module over one of its limits.
func overLimit(what, limit string, value uint64) error {
	return &Error{Message: fmt.Sprintf("%s, over the limit of %d (sandbox module limit %s)", what, value, limit)}
}
