package sandbox

// WriteStderr appends p to the guest's stderr (Outcome.Stderr), capped
// like its own writes: past Limits.MaxStderr the call ends as output_limit.
func (c Call) WriteStderr(p []byte) {
	// extism.CurrentPlugin's Log and Logf write through it, as the
	// plugin's own log functions do (extismLog). It runs on the guest's
	// goroutine, inside the host function's call, like the guest's writes.
	if c.st == nil || len(p) == 0 {
		return
	}
	_, _ = c.st.stderr.Write(p) // over its cap it panics: the call ends as output_limit
}
