package sandbox

// limitHint is what the message of a task's outcome over one of its
// limits ends with: the flag of runner run, submit and batch and the
// configuration key that raise that limit, and the key that caps them
// (so a refusal never leaves its reader to guess the knob); "" for an
// outcome of any other kind. stderr: an output_limit over the stderr cap.
// Plugin calls (Plugin.Call) have knobs of their own, and no hint.
func limitHint(k Kind, stderr bool) string {
	switch k {
	case KindOutputLimit:
		if stderr {
			return "; raise it with --stderr-cap or limits.stderr (at most limits.max_stderr)"
		}
		return "; raise it with --stdout-cap or limits.stdout (at most limits.max_stdout)"
	case KindMemoryLimit:
		return "; raise it with --memory or limits.memory (at most limits.max_memory)"
	case KindTimedOut:
		return "; raise it with --timeout or limits.timeout (at most limits.max_timeout)"
	case KindWorkLimit:
		return "; raise it with --work or limits.work"
	}
	return ""
}
