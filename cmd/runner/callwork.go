package main

import "github.com/stint-run/stint/sandbox"

// callWorkUsage is the help of `runner call --work`.
const callWorkUsage = "work budget of the call, in work units: past it the plugin ends with outcome work_limit (exit 18), deterministically (default limits.work; needs sandbox.interrupt=checks)"

// applyCallWork sets the manifest's work budget from `runner call --work`
// ("" leaves the runtime's default, limits.work).
func applyCallWork(work string, man *sandbox.Manifest) error {
	if work == "" {
		return nil
	}
	var n int
	if !isInt(work, &n) || n <= 0 {
		return usageErrorf("--work %s: want a positive number of work units", work)
	}
	man.Limits.Work = int64(n)
	return nil
}
