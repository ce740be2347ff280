package server

// OpenConns is how many connections s has accepted and not closed.
func OpenConns(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.ln.(*limitListener); ok {
		return l.open()
	}
	return -1
}
