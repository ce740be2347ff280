package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The dashboard's sessions and the sign-in's rate limit.
//
// A session is a cookie "v2.ISSUED.SEEN.MAC": the Unix seconds of its
// sign-in and of its last request, and an HMAC-SHA256 of both under a
// random key the server draws when it starts. Nothing is kept per
// session: a cookie is valid while its MAC checks, SEEN is less than
// Config.SessionIdle ago and ISSUED less than Config.SessionMax ago. Each
// page renews SEEN (a new cookie). RevokeSessions draws a new key, which
// ends every session at once, as a restart does; so does a new token
// (it needs a restart).

// Sign-in rate limit: failed sign-ins (the form, ?token=) per remote
// address, a token bucket of signInBurst tries refilled one per
// signInRefill; past it a sign-in gets 429 before the token is compared.
const (
	signInBurst  = 10
	signInRefill = 6 * time.Second
	// signInAddrs bounds the addresses tracked; past it the full buckets
	// (nothing to remember) are dropped, then, if none is, the whole map.
	signInAddrs = 10000
)

// sessions holds the key of the session cookies and the sign-in buckets.
type sessions struct {
	idle, max time.Duration
	now       func() time.Time

	mu      sync.Mutex
	key     []byte
	buckets map[netip.Addr]bucket
}

// bucket is one address's failed sign-ins: tokens left at a time.
type bucket struct {
	tokens float64
	at     time.Time
}

func newSessions(idle, max time.Duration) *sessions {
	s := &sessions{idle: idle, max: max, now: time.Now, buckets: map[netip.Addr]bucket{}}
	s.rotate()
	return s
}

// rotate draws a new key: every session signed with the old one ends.
func (s *sessions) rotate() {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	s.mu.Lock()
	s.key = key
	s.mu.Unlock()
}

// mac is the cookie's MAC of issued and seen.
func (s *sessions) mac(issued, seen int64) string {
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	m := hmac.New(sha256.New, key)
	m.Write([]byte("stint dashboard session v2|" + strconv.FormatInt(issued, 10) + "|" + strconv.FormatInt(seen, 10)))
	return hex.EncodeToString(m.Sum(nil))
}

// cookie is the value of a session signed in at issued and last seen at
// seen (Unix seconds).
func (s *sessions) cookie(issued, seen int64) string {
	return "v2." + strconv.FormatInt(issued, 10) + "." + strconv.FormatInt(seen, 10) + "." + s.mac(issued, seen)
}

// check reports whether v is a live session, and its sign-in time.
func (s *sessions) check(v string) (issued int64, ok bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 4 || parts[0] != "v2" {
		return 0, false
	}
	issued, err1 := strconv.ParseInt(parts[1], 10, 64)
	seen, err2 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || !equalHashed(parts[3], s.mac(issued, seen)) {
		return 0, false
	}
	now := s.now()
	if now.Sub(time.Unix(seen, 0)) >= s.idle || now.Sub(time.Unix(issued, 0)) >= s.max {
		return 0, false
	}
	return issued, true
}

// maxAge is the cookie's Max-Age for a session signed in at issued: what
// is left of its absolute lifetime.
func (s *sessions) maxAge(issued int64) int {
	left := time.Unix(issued, 0).Add(s.max).Sub(s.now())
	return max(1, int(left/time.Second))
}

// allowSignIn reports whether addr may try a sign-in now: its bucket
// holds a token.
func (s *sessions) allowSignIn(addr netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refilled(addr, s.now()).tokens >= 1
}

// failedSignIn takes a token from addr's bucket.
func (s *sessions) failedSignIn(addr netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	b := s.refilled(addr, now)
	b.tokens = max(0, b.tokens-1)
	if _, ok := s.buckets[addr]; !ok && len(s.buckets) >= signInAddrs {
		for a, ob := range s.buckets {
			if s.refilledBucket(ob, now).tokens >= signInBurst {
				delete(s.buckets, a)
			}
		}
		if len(s.buckets) >= signInAddrs {
			clear(s.buckets)
		}
	}
	s.buckets[addr] = b
}

// refilled is addr's bucket at now. Called with s.mu held.
func (s *sessions) refilled(addr netip.Addr, now time.Time) bucket {
	b, ok := s.buckets[addr]
	if !ok {
		return bucket{tokens: signInBurst, at: now}
	}
	return s.refilledBucket(b, now)
}

func (s *sessions) refilledBucket(b bucket, now time.Time) bucket {
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(signInBurst, b.tokens+float64(d)/float64(signInRefill))
		b.at = now
	}
	return b
}

// remoteAddr is the address r came from (RemoteAddr without its port),
// IPv4-mapped addresses unmapped; the zero Addr when it does not parse.
func remoteAddr(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// revokeSessions is POST /v1/sessions/revoke: RevokeSessions, behind the
// API's bearer token. Without a token there are no sessions to end.
func (s *Server) revokeSessions(w http.ResponseWriter, _ *http.Request) {
	s.RevokeSessions()
	writeJSON(w, http.StatusOK, map[string]bool{"revoked": s.dash.sess != nil})
}
