package tasks

import (
	"errors"
	"time"
)

// ErrRunnerNotFound is RequestDrain's error for an owner with no record.
var ErrRunnerNotFound = errors.New("runner not found")

// RunnerInfo is one runner as it records itself in a store it works
// (Store.RecordRunner): who it is, what it runs, and when it was last heard
// from.
type RunnerInfo struct {
	// Owner is the runner's lease owner id, the record's key.
	Owner string `json:"owner"`
	// Host is the host name the runner runs on; PID its process id.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Version is the runner's version.
	Version string `json:"version"`
	// Started is when the runner started.
	Started time.Time `json:"started"`
	// LastSeen is when the runner last recorded itself, by the store's
	// clock (RecordRunner sets it).
	LastSeen time.Time `json:"last_seen"`
	// Lease is how long the runner may stay silent before it counts as
	// gone: past LastSeen+Lease, Silent is true.
	Lease time.Duration `json:"lease"`
	// Workers is the size of the runner's worker pool, InFlight the
	// attempts it runs or holds claimed, and Held, of those, the tasks it
	// claimed that wait for a free worker (shown StateClaimed; the pool
	// gives them back if they wait long).
	Workers  int `json:"workers"`
	InFlight int `json:"in_flight"`
	Held     int `json:"held"`
	// Draining is true once the runner stopped claiming (it is stopping),
	// or was asked to (RequestDrain): it stops claiming at its next
	// heartbeat.
	Draining bool `json:"draining"`
	// Silent is true when the runner has not recorded itself for longer
	// than its Lease, by the store's clock when Runners read it: it died,
	// hangs, or lost the store.
	Silent bool `json:"silent"`
}
