package specrow

import (
	"encoding/json"
	"fmt"

	"github.com/stint-run/stint/tasks"
)

// Columns are what a store scans of a task's row that both stores decode
// alike: the JSON columns Row encodes, and the JSON array that describes
// the task's snapshot (tasks.DecodeSnapshotInfo). Nil is NULL: none.
type Columns struct {
	Args, Env, Mounts, Limits, Labels []byte
	Snapshot                          []byte
}

// Decode sets t's snapshot description and the fields of its JSON
// columns from c; backend ("sqlite", "postgres") begins its errors,
// which name the task and the column.
func (c *Columns) Decode(backend string, t *tasks.Task) error {
	if c.Snapshot != nil {
		info, err := tasks.DecodeSnapshotInfo(c.Snapshot)
		if err != nil {
			return fmt.Errorf("%s: task %d: decode its snapshot's description: %w", backend, t.ID, err)
		}
		t.Snapshot = &info
	}
	for _, f := range []struct {
		name string
		src  []byte
		dst  any
	}{
		{"args", c.Args, &t.Args},
		{"env", c.Env, &t.Env},
		{"mounts", c.Mounts, &t.Mounts},
		{"limits", c.Limits, &t.Limits},
		{"labels", c.Labels, &t.Labels},
	} {
		if f.src != nil {
			if err := json.Unmarshal(f.src, f.dst); err != nil {
				return fmt.Errorf("%s: task %d: decode %s: %w", backend, t.ID, f.name, err)
			}
		}
	}
	return nil
}
