// Package specrow is the row preparation both store backends
// (tasks/sqlite, tasks/postgres) share, the same way in both: each
// submitted spec validated and its defaults filled in, its JSON columns
// encoded, and read back into a task; a SubmitMany's repeated
// idempotency keys found; a schedule's spec stored and read back; a
// module's hash, and a module read by it. Each store binds and scans
// the columns in its own way.
//
// Files: specrow.go (a spec's row, SubmitMany's keys, modules, an
// attempt's ResumedFrom), columns.go (a task's JSON columns read back),
// schedule.go (a schedule's row).
package specrow
