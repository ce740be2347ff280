package server

import "time"

// OpenConns is how many connections s has accepted and not closed.
func OpenConns(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.ln.(*limitListener); ok {
		return l.open()
	}
	return -1
}

// LargeSpecs is largeSpecs (fuzz_spec_test.go): spec bodies with each
// capped field at its cap and one over, for FuzzHandlers' seeds.
func LargeSpecs(module string) [][]byte { return largeSpecs(module) }

// SetClock makes s read the time of its dashboard sessions and sign-in
// limit from now (before it serves a request).
func SetClock(s *Server, now func() time.Time) {
	if s.dash.sess != nil {
		s.dash.sess.now = now
	}
}

// Tail is tail.
func Tail(n int, s string) string { return tail(n, s) }

// StderrTail is stderrTail.
func StderrTail(s string) string { return stderrTail(s) }

// InProgress is inProgress.
func InProgress(n int) string { return inProgress(n) }
