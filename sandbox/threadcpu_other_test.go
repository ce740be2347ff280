//go:build !linux

package sandbox

import "time"

var processStart = time.Now()

// threadCPU is wall time where the thread's CPU time is not read.
func threadCPU() time.Duration { return time.Since(processStart) }
